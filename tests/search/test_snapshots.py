"""Snapshots: export on one backend, import on another, the same collection; a snapshot taken while a
writer commits holds a prefix of its commits; damaged, altered, newer or foreign files are refused
with the target untouched; a killed import resumes."""

from __future__ import annotations

import io
import json
import random
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from munjang.search import CollectionError
from munjang.search.collection import snapshots
from munjang.search.collection.collection import Collection
from munjang.search.collection.snapshot_format import SnapshotError, SnapshotReader
from tests.helpers.collection_backends import Backend, qdrant_url
from tests.helpers.crash_writer import start_writer
from tests.helpers.paths import SCRIPTS

QUERIES = ["고양이가 소파에서 잔다", "주식 시장이 급락했다", "river music", "서울 학교 선생님"]
WORDS = [
    *("서울", "부산", "고양이", "강아지", "시장", "주식", "음악", "기타", "학교", "선생님"),
    *("guitar", "market", "cat", "school", "river", "music"),
]


def _place(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Backend:
    if kind == "embedded":
        return Backend("embedded", tmp_path)
    if kind == "qdrant":
        return Backend("qdrant", tmp_path, qdrant_url(tmp_path))
    return Backend("postgres", tmp_path, request.getfixturevalue("postgres_url"))


def _documents(n: int) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    ids = [f"doc{i}" for i in range(n)]
    # Every 7th document is long enough for several passages (32-token budget), so spans and the
    # whole-document source travel too.
    rng = random.Random(n)  # random words: no two passages alike, so no ties to order
    texts = [" ".join(rng.choices(WORDS, k=8 + (40 if i % 7 == 0 else i % 5))) for i in range(n)]
    metas = [{"n": i, "tag": WORDS[i % len(WORDS)], "nested": {"even": i % 2 == 0}} for i in range(n)]
    return ids, texts, metas


def _results(col: Collection) -> list[list[tuple[str, float]]]:
    return [
        [(hit.id, hit.score) for hit in col.search(q, k=10, mode=mode)]
        for mode in ("dense", "lexical", "hybrid")
        for q in QUERIES
    ]


def _docs(col: Collection, ids: list[str]) -> list[Any]:
    """What a document is, whichever backend holds it (its label is the store's own)."""
    return [None if d is None else (d.id, d.text, d.metadata, d.chunk, d.start, d.end) for d in col.get(ids)]


def _same_ranking(want: list[tuple[str, float]], got: list[tuple[str, float]]) -> None:
    """The same hits with the same scores (float tolerance), best first; hits whose scores tie within
    that tolerance may come in either order (each backend computes scores in its own arithmetic)."""
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-5, abs=1e-6)
    scores = dict(want)
    for position, (doc, score) in enumerate(got):
        if doc != want[position][0]:
            tied = scores.get(doc, want[-1][1])  # absent: a tie at the cut of the top 10
            assert score == pytest.approx(tied, rel=1e-5, abs=1e-6), (position, doc, want, got)


def _no_model_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading an encoder fails the test: an import must not encode."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an encoder was loaded during the import")

    monkeypatch.setattr("munjang.encoders.embedder.load_embedder", refuse)


@pytest.mark.slow
@pytest.mark.parametrize(
    "source, target",
    [("embedded", "postgres"), ("postgres", "qdrant"), ("qdrant", "embedded")],
    ids=["folder-to-postgres", "postgres-to-qdrant", "qdrant-to-folder"],
)
def test_a_snapshot_restores_the_same_collection_on_another_backend(
    source: str, target: str, encoder: Any, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch
) -> None:
    src = _place(source, tmp_path / "src", request)
    dst = _place(target, tmp_path / "dst", request)
    ids, texts, metas = _documents(120)
    col = src.create("c", encoder=encoder, tokenizer="word", chunking={"max_tokens": 32})
    col.add(ids, texts, metas)
    col.delete(["doc5", "doc6"])  # deletions are not carried: the snapshot holds what is stored
    expected = _results(col)
    kept = _docs(col, ids)
    info = col.info()
    manifest = col.export(tmp_path / "c.snapshot")
    col.close()
    assert manifest["counts"] == {"documents": 118, "passages": info["passages"]}

    with monkeypatch.context() as m:
        _no_model_loads(m)
        restored = Collection.import_(tmp_path / "c.snapshot", dst.location("c"), backend=dst.url)
    try:
        assert _docs(restored, ids) == kept
        assert [d is None for d in restored.get(ids)] == [i in ("doc5", "doc6") for i in ids]
        assert (restored.info()["documents"], restored.info()["passages"]) == (118, info["passages"])
        for key in ("model", "dim", "metric", "index", "chunking", "lexical"):
            assert restored.info()[key] == info[key]
        assert restored.check() == []
        restored.use_encoder(encoder)
        found = _results(restored)
        for want, got in zip(expected, found, strict=True):
            _same_ranking(want, got)
    finally:
        restored.close()


def _start(folder: Any, url: str | None, batches: int, size: int) -> subprocess.Popen[str]:
    env = {} if url is None else {"MUNJANG_BACKEND": url}
    return start_writer(str(folder), str(batches), str(size), env=env, script=SCRIPTS / "batch_writer.py")


def _archive_ids(path: Path) -> list[str]:
    with SnapshotReader(path) as reader:
        return [i for table in reader.shards() for i in table.column("id").to_pylist()]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["embedded", "postgres"])
def test_a_snapshot_taken_while_a_writer_commits_holds_a_prefix_of_its_commits(
    kind: str, encoder: Any, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch
) -> None:
    place = _place(kind, tmp_path, request)
    place.create("c", encoder=encoder, tokenizer="word").close()
    batches, size = 50, 20
    monkeypatch.setattr(snapshots, "SHARD_ROWS", 64)  # many reads of the store while it changes
    writer = _start(place.location("c"), place.url, batches, size)
    assert writer.stdout is not None
    taken = []
    try:
        for line in writer.stdout:  # a snapshot after the 5th, 20th and 35th commits, the writer going on
            if line.split()[-1] in ("4", "19", "34"):
                with place.open("c", readonly=True) as col:
                    col.export(tmp_path / f"s{len(taken)}.snapshot", show_progress_bar=False)
                taken.append(tmp_path / f"s{len(taken)}.snapshot")
    finally:
        assert writer.wait(timeout=300) == 0, writer.stderr.read() if writer.stderr else ""
    assert len(taken) == 3
    for path in taken:
        held = _archive_ids(path)
        assert len(held) % size == 0 and held  # whole commits only
        k = len(held) // size
        assert held == [f"b{n}-{i}" for n in range(k) for i in range(size)]
        with SnapshotReader(path) as reader:
            assert reader.manifest["counts"] == {"documents": len(held), "passages": len(held)}


@pytest.fixture(scope="module")
def snapshot(encoder: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder collection (`src` beside the file) and its snapshot: 40 documents in 4 shards."""
    folder = tmp_path_factory.mktemp("snapshot")
    ids, texts, metas = _documents(40)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(snapshots, "SHARD_ROWS", 10)
        with Collection.create(folder / "src", encoder=encoder, tokenizer="word") as col:
            col.add(ids, texts, metas)
            col.export(folder / "good.snapshot")
    return folder / "good.snapshot"


def _rewrite(source: Path, target: Path, change: Any) -> Path:
    """A copy of a snapshot with `change(name, data)` applied to each member (None drops it)."""
    with tarfile.open(source) as src, tarfile.open(target, "w") as dst:
        for member in src.getmembers():
            f = src.extractfile(member)
            assert f is not None
            data = change(member.name, f.read())
            if data is not None:
                info = tarfile.TarInfo(member.name)
                info.size = len(data)
                dst.addfile(info, io.BytesIO(data))
    return target


def _manifest(change: Any) -> Any:
    def apply(name: str, data: bytes) -> bytes:
        if name != "manifest.json":
            return data
        manifest = json.loads(data)
        change(manifest)
        return json.dumps(manifest).encode()

    return apply


def _flip(path: Path, target: Path) -> Path:
    data = bytearray(path.read_bytes())
    with tarfile.open(path) as tar:
        member = tar.getmember("passages/000002.parquet")
    data[member.offset_data + member.size // 2] ^= 0x40
    target.write_bytes(bytes(data))
    return target


def _escape(path: Path, target: Path) -> Path:
    with tarfile.open(path) as src, tarfile.open(target, "w") as dst:
        for member in src.getmembers():
            dst.addfile(member, src.extractfile(member))
        evil = tarfile.TarInfo("../../escaped.txt")
        evil.size = 3
        dst.addfile(evil, io.BytesIO(b"pwn"))
    return target


def _link(path: Path, target: Path) -> Path:
    with tarfile.open(path) as src, tarfile.open(target, "w") as dst:
        for member in src.getmembers():
            dst.addfile(member, src.extractfile(member))
        link = tarfile.TarInfo("passages/000009.parquet")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        dst.addfile(link)
    return target


BAD = {
    "truncated": (lambda p, t: t.write_bytes(p.read_bytes()[: p.stat().st_size // 2]) and t, "truncated"),
    "flipped byte": (_flip, "checksum"),
    "newer format": (lambda p, t: _rewrite(p, t, _manifest(lambda m: m.update(version=2))), "version 2"),
    "other weights": (
        lambda p, t: _rewrite(p, t, _manifest(lambda m: m.update(weights_sha256="0" * 64))),
        "other weights",
    ),
    "path escapes": (_escape, "unexpected archive member '../../escaped.txt'"),
    "symlink": (_link, "unexpected archive member"),
    "shard missing": (
        lambda p, t: _rewrite(p, t, lambda n, d: None if n.endswith("1.parquet") else d),
        "shards",
    ),
    "not a snapshot": (lambda p, t: t.write_bytes(b"hello") and t, "not a whole snapshot"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_snapshot_is_refused_and_the_target_left_untouched(
    case: str, snapshot: Path, tmp_path: Path, monkeypatch
) -> None:
    make, message = BAD[case]
    bad = make(snapshot, tmp_path / "bad.snapshot")
    _no_model_loads(monkeypatch)
    with pytest.raises(SnapshotError, match=message):
        Collection.import_(bad, tmp_path / "restored")
    assert not (tmp_path / "restored").exists()
    assert not (tmp_path.parent / "escaped.txt").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.snapshot"]


def test_an_import_into_an_existing_collection_is_refused(snapshot: Path, tmp_path: Path) -> None:
    Collection.import_(snapshot, tmp_path / "c").close()
    with Collection.open(tmp_path / "c") as col:
        col.delete(["doc0"])
    with pytest.raises(CollectionError, match="exists"):
        Collection.import_(snapshot, tmp_path / "c")
    with Collection.open(tmp_path / "c") as col:
        assert len(col) == 39 and "doc0" not in col


def test_a_killed_import_refuses_to_open_and_resumes(
    snapshot: Path, encoder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = SnapshotReader.shards

    def die_after_two(self: SnapshotReader, start: int = 0) -> Any:
        for n, table in enumerate(real(self, start)):
            if start + n == 2:
                raise KeyboardInterrupt  # as a kill between two committed shards
            yield table

    with monkeypatch.context() as m:
        m.setattr(SnapshotReader, "shards", die_after_two)
        with pytest.raises(KeyboardInterrupt):
            Collection.import_(snapshot, tmp_path / "restored")
    with pytest.raises(Exception, match="did not finish"):
        Collection.open(tmp_path / "restored")
    resumed_from: list[int] = []

    def record(self: SnapshotReader, start: int = 0) -> Any:
        resumed_from.append(start)
        return real(self, start)

    monkeypatch.setattr(SnapshotReader, "shards", record)
    _no_model_loads(monkeypatch)
    with (
        Collection.import_(snapshot, tmp_path / "restored") as col,
        Collection.open(snapshot.parent / "src", readonly=True) as src,
    ):
        assert resumed_from == [2]
        ids = list(src.ids())
        assert list(col.ids()) == ids and _docs(col, ids) == _docs(src, ids)
        assert col.check() == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sparse", "multi_vector"])
def test_sparse_and_multi_vector_rows_travel_and_search_the_same(
    kind: str, encoder: Any, tmp_path: Path, monkeypatch
) -> None:
    from tests.helpers.multi_vector import st_multi_vector
    from tests.helpers.sparse import munjang_splade

    if kind == "sparse":
        model = munjang_splade(tmp_path / "splade", inference_free=True)
    else:
        model = st_multi_vector(tmp_path / "colbert")
    ids, texts, metas = _documents(30)
    col = Collection.create(tmp_path / "src", encoder=encoder, tokenizer="word", **{f"{kind}_model": model})
    col.add(ids, texts, metas)
    expected = [[(h.id, h.score) for h in col.search(q, k=10, mode=kind)] for q in QUERIES]
    col.export(tmp_path / "c.snapshot")
    col.close()
    target = Backend("qdrant", tmp_path, qdrant_url(tmp_path))
    _no_model_loads(monkeypatch)
    with Collection.import_(tmp_path / "c.snapshot", target.location("c"), backend=target.url) as restored:
        assert restored.info()[kind] is not None
        assert restored.check() == []
        found = [[(h.id, h.score) for h in restored.search(q, k=10, mode=kind)] for q in QUERIES]
    assert any(expected)
    for want, got in zip(expected, found, strict=True):
        _same_ranking(want, got)
