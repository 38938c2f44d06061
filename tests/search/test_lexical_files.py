"""The BM25 index saved beside a folder collection: a reader that maps it (and catches up from its
watermark) answers exactly as BM25 rebuilt from the store, after adds, deletes, upserts and reopens;
a save cut short, a damaged or a missing file only cost a rebuild, never a wrong answer; a reader in
another process sees what the writer committed."""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from munjang.search import Collection
from munjang.search.followers import lexical_files
from munjang.search.followers.lexical import LexicalIndex
from munjang.search.index.array_file import ArrayFileError, read_arrays, write_arrays
from tests.search.test_incremental_bm25 import WORDS, rebuilt_lexical


@pytest.fixture(autouse=True)
def save_every_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """Save BM25's files after every write (the default waits for SAVE_EVERY passages, or close)."""
    from munjang.search.collection import collection as module

    monkeypatch.setattr(module, "SAVE_EVERY", 1)


QUERIES = [["고양이", "w3"], ["시장", "주식", "w10"], ["w1", "w2", "w5", "w7"], ["급락"], ["소파", "w44"]]


def make(tmp_path: Path, encoder) -> Path:  # type: ignore[no-untyped-def]
    folder = tmp_path / "c"
    Collection.create(folder, encoder=encoder, tokenizer="word", chunking={"max_tokens": 24}).close()
    return folder


def sentences(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40))) for _ in range(n)]


def assert_matches_rebuild(collection: Collection) -> None:
    for query in QUERIES:
        for spec in (None, {"even": True}):
            text = " ".join(query)
            got = collection.search(text, 8, mode="lexical", unit="passage", filter=spec)
            ids, scores = rebuilt_lexical(collection, text, spec)
            assert [(h.id, h.chunk) for h in got] == ids
            np.testing.assert_allclose([h.score for h in got], scores, rtol=1e-5)


def test_array_file_round_trip_and_refusals(tmp_path: Path) -> None:
    arrays = {"a": np.arange(10, dtype=np.int64), "b": np.zeros((0,), np.float32), "c": np.ones((3, 2))}
    write_arrays(tmp_path / "x.idx", arrays, {"k": 1})
    meta, back = read_arrays(tmp_path / "x.idx")
    assert meta == {"k": 1} and set(back) == set(arrays)
    for name, a in arrays.items():
        np.testing.assert_array_equal(back[name], a)
        assert not back[name].flags.writeable
    data = (tmp_path / "x.idx").read_bytes()
    (tmp_path / "short.idx").write_bytes(data[:-20])
    (tmp_path / "junk.idx").write_bytes(b"junk" * 10)
    for name in ("short.idx", "junk.idx"):
        with pytest.raises(ArrayFileError):
            read_arrays(tmp_path / name)


def test_a_reader_maps_the_saved_index_and_answers_as_a_rebuild(tmp_path: Path, encoder) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(0)
    folder = make(tmp_path, encoder)
    texts = sentences(rng, 200)
    with Collection.open(folder, encoder=encoder) as writer:
        for step in range(5):
            ids = [f"d{step}-{i}" for i in range(40)]
            meta = [{"even": i % 2 == 0} for i in range(40)]
            writer.add(ids, texts[40 * step : 40 * step + 40], meta, commit_every=9)
            if step:
                writer.delete([f"d{step - 1}-{i}" for i in range(0, 40, 3)])
                writer.upsert([f"d0-{i}" for i in range(4)], [f"갱신 {step} 고양이 시장 w3"] * 4)
            manifests = sorted((folder / "lexical").glob("lexical-*.idx"))
            assert len(manifests) == 1  # older manifests and unused segments are removed
            mark = writer.store.watermark()
            assert manifests[0].name == f"lexical-{mark.label}-{mark.deletion}.idx"
            with Collection.open(folder, encoder=encoder, readonly=True) as reader:
                assert_matches_rebuild(reader)
                assert isinstance(reader.lexical, LexicalIndex) and reader.lexical.saved == mark
                assert reader.check() == []
            assert_matches_rebuild(writer)
        # Segments stay few (merged as a binary counter), each named by its text range.
        names = [p.name for p in (folder / "lexical").glob("seg-*.idx")]
        assert 1 <= len(names) <= 2 + int(np.log2(len(writer.lexical.starts)))


def test_a_reader_catches_up_from_an_older_save(tmp_path: Path, encoder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A writer killed after its commit, before it saved the index: the reader maps the older files
    and replays the rest (adds and deletes) from the store."""
    rng = random.Random(1)
    folder = make(tmp_path, encoder)
    real_save = LexicalIndex.save
    with Collection.open(folder, encoder=encoder) as writer:
        writer.add(
            [f"a{i}" for i in range(60)], sentences(rng, 60), [{"even": i % 2 == 0} for i in range(60)]
        )
        saved = writer.store.watermark()
        monkeypatch.setattr(LexicalIndex, "save", lambda self: None)
        writer.add([f"b{i}" for i in range(50)], sentences(rng, 50), [{"even": True}] * 50, commit_every=7)
        writer.delete([f"a{i}" for i in range(0, 60, 4)])
        assert writer.store.watermark() != saved
    monkeypatch.setattr(LexicalIndex, "save", real_save)
    with Collection.open(folder, encoder=encoder, readonly=True) as reader:
        assert_matches_rebuild(reader)
        assert isinstance(reader.lexical, LexicalIndex) and reader.lexical.saved == saved
        assert reader.check() == []


def test_a_save_cut_short_leaves_the_previous_one(tmp_path: Path, encoder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Segments written, then the process dies before the manifest: the old manifest is used, and
    the next save removes the stray segments."""
    rng = random.Random(2)
    folder = make(tmp_path, encoder)
    with Collection.open(folder, encoder=encoder) as writer:
        writer.add([f"a{i}" for i in range(40)], sentences(rng, 40))
        saved = writer.store.watermark()
        real = lexical_files.write_arrays

        def dies_at_manifest(path: Path, arrays, meta=None) -> None:  # type: ignore[no-untyped-def]
            if path.name.startswith("lexical-"):
                raise KeyboardInterrupt  # a kill between the segment files and the manifest
            real(path, arrays, meta)

        monkeypatch.setattr(lexical_files, "write_arrays", dies_at_manifest)
        with pytest.raises(KeyboardInterrupt):
            writer.add([f"b{i}" for i in range(40)], sentences(rng, 40))
        monkeypatch.setattr(lexical_files, "write_arrays", real)
        with Collection.open(folder, encoder=encoder, readonly=True) as reader:
            assert_matches_rebuild(reader)
            assert isinstance(reader.lexical, LexicalIndex) and reader.lexical.saved == saved
        assert len(list((folder / "lexical").glob("seg-*"))) > 0
        writer.add([f"c{i}" for i in range(10)], sentences(rng, 10))
        (manifest,) = (folder / "lexical").glob("lexical-*.idx")
        named = set(read_arrays(manifest)[0]["segments"])
        assert {p.name for p in (folder / "lexical").iterdir()} == {manifest.name, *named}
    with Collection.open(folder, encoder=encoder, readonly=True) as reader:
        assert_matches_rebuild(reader)


@pytest.mark.parametrize("damage", ["truncate", "garbage", "delete", "manifest"])
def test_a_damaged_or_missing_file_is_rebuilt_from_the_store(tmp_path: Path, encoder, damage: str) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(3)
    folder = make(tmp_path, encoder)
    with Collection.open(folder, encoder=encoder) as writer:
        for step in range(3):
            writer.add(
                [f"d{step}-{i}" for i in range(30)],
                sentences(rng, 30),
                [{"even": i % 2 == 0} for i in range(30)],
            )
        writer.delete([f"d0-{i}" for i in range(5)])
    files = folder / "lexical"
    target = sorted(files.glob("lexical-*.idx" if damage == "manifest" else "seg-*.idx"))[0]
    if damage == "truncate":
        target.write_bytes(target.read_bytes()[:-100])
    elif damage in ("garbage", "manifest"):
        target.write_bytes(os.urandom(target.stat().st_size))
    else:
        target.unlink()
    with Collection.open(folder, encoder=encoder, readonly=True) as reader:
        assert_matches_rebuild(reader)
        assert isinstance(reader.lexical, LexicalIndex) and reader.lexical.saved is None
        assert reader.check() == []
    with Collection.open(folder, encoder=encoder) as writer:  # the next write saves whole files again
        writer.add(["new"], ["고양이 w3 시장"])
    with Collection.open(folder, encoder=encoder, readonly=True) as reader:
        assert isinstance(reader.lexical, LexicalIndex)
        assert_matches_rebuild(reader)
        assert reader.lexical.saved == reader.store.watermark()


READER = """
import json, sys
from munjang.search import Collection
col = Collection.open(sys.argv[1], readonly=True)
out = {q: [(h.id, round(h.score, 5)) for h in col.search(q, 5, mode="lexical")] for q in sys.argv[2:]}
out["saved"] = list(vars(col.lexical.saved).values())
print(json.dumps(out))
"""


def test_a_reader_in_another_process_sees_the_writes(tmp_path: Path, encoder) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(4)
    folder = make(tmp_path, encoder)
    queries = [" ".join(q) for q in QUERIES]
    with Collection.open(folder, encoder=encoder) as writer:
        for step in range(2):
            writer.add([f"d{step}-{i}" for i in range(50)], sentences(rng, 50))
            writer.delete([f"d{step}-{i}" for i in range(0, 50, 5)])
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
            run = subprocess.run(
                [sys.executable, "-c", READER, str(folder), *queries],
                capture_output=True, text=True, check=True, env=env,
            )  # fmt: skip
            got = json.loads(run.stdout)
            mark = writer.store.watermark()
            assert got.pop("saved") == [mark.label, mark.deletion]
            for query in queries:
                want = [(h.id, round(h.score, 5)) for h in writer.search(query, 5, mode="lexical")]
                assert [tuple(x) for x in got[query]] == want


def test_a_long_add_saves_as_it_goes(tmp_path: Path, encoder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A reader opened during a long add replays at most about SAVE_EVERY passages from the store."""
    from munjang.search.collection import collection as module

    monkeypatch.setattr(module, "SAVE_EVERY", 20)
    marks: list[int] = []
    real = LexicalIndex.save

    def save(self: LexicalIndex) -> None:
        real(self)
        assert self.saved is not None
        marks.append(self.saved.label)

    monkeypatch.setattr(LexicalIndex, "save", save)
    folder = make(tmp_path, encoder)
    with Collection.open(folder, encoder=encoder) as writer:
        writer.add([f"d{i}" for i in range(100)], sentences(random.Random(5), 100), commit_every=10)
    assert len(marks) >= 3 and max(b - a for a, b in itertools.pairwise([0, *marks])) <= 20 + 40
    with Collection.open(folder, encoder=encoder, readonly=True) as reader:
        assert_matches_rebuild(reader)


def test_small_writes_are_saved_in_bulk_or_on_close(tmp_path: Path, encoder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """With the default SAVE_EVERY, small adds write no file each; closing the writer saves them."""
    from munjang.search.collection import collection as module

    monkeypatch.setattr(module, "SAVE_EVERY", 2_000)
    folder = make(tmp_path, encoder)
    writer = Collection.open(folder, encoder=encoder)
    for step in range(3):
        writer.add([f"d{step}"], [f"고양이 시장 w{step}"])
    assert not (folder / "lexical").exists()
    mark = writer.store.watermark()
    writer.close()
    with Collection.open(folder, encoder=encoder, readonly=True) as reader:
        assert isinstance(reader.lexical, LexicalIndex)
        assert_matches_rebuild(reader)
        assert reader.lexical.saved == mark


def test_a_catch_up_reads_the_store_a_range_at_a_time_and_answers_as_one_read(  # type: ignore[no-untyped-def]
    tmp_path: Path, encoder, monkeypatch
) -> None:
    """A restored or new collection's first catch-up held every passage's tokens as Python lists at
    once (5.8 GB at 1M passages): it reads ranges of CATCH_UP_LABELS labels, and a document whose
    passages share a window across a range's edge is still one text to BM25."""
    from munjang.search.followers import lexical as lexical_module

    rng = random.Random(2)
    folder = make(tmp_path, encoder)
    with Collection.open(folder, encoder=encoder) as writer:
        writer.add(
            [f"a{i}" for i in range(60)], sentences(rng, 60), [{"even": i % 2 == 0} for i in range(60)]
        )
        writer.delete([f"a{i}" for i in range(0, 60, 5)])
        labels = writer.store.watermark().label
        found, ids, tokens = writer.store.tokens()
    shares = [i for i in range(1, len(ids)) if (ids[i], tokens[i]) == (ids[i - 1], tokens[i - 1])]
    assert any(found[i] % 5 == 1 for i in shares)  # a shared window across a range's edge
    shutil.rmtree(folder / "lexical")
    monkeypatch.setattr(lexical_module, "CATCH_UP_LABELS", 5)
    with Collection.open(folder, encoder=encoder, readonly=True) as reader:
        calls: list[tuple[int, int | None]] = []
        real = reader.store.tokens

        def spy(after: int = 0, upto: int | None = None):  # type: ignore[no-untyped-def]
            calls.append((after, upto))
            return real(after=after, upto=upto)

        monkeypatch.setattr(reader.store, "tokens", spy)
        reader.lexical.sync(reader.store, wait=True)
        assert len(calls) == -(-labels // 5) and all(u is not None and u - a <= 5 for a, u in calls)
        monkeypatch.setattr(reader.store, "tokens", real)
        assert_matches_rebuild(reader)
