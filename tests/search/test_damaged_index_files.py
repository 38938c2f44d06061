"""The damaged-file matrix: every index file a folder collection keeps beside its store (the exact
matrix, an HNSW graph, its segments and their manifest, a dense tail, the BM25 manifest and
segments), damaged every way a disk, a careless copy or a restore can (flipped bytes, cut short,
rows permuted or set to NaN, a same-named file of another collection, files newer than the store, a
FIFO in place; a graph segment deleted from the middle, one extra, two swapped).
After each, a new reader answers as the undamaged collection does, `check()` finds nothing left
wrong, the damaged file is set aside with one warning line, and no process crashes or blocks: each
case runs in a process of its own (usearch trusts its files: a garbled graph could crash it)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from munjang.search.collection.collection import Collection
from munjang.search.followers import dense as live_index
from munjang.search.index.ann import HNSWIndex, IndexFileError
from munjang.search.index.array_file import ArrayFileError, read_arrays, write_arrays
from tests.helpers import damaged_index_files as damaged
from tests.helpers.processes import ROOT

WORDS = {
    "en": ["guitar", "stage", "market", "stock", "cat", "sofa", "rain", "seoul", "music", "news"],
    "ko": ["고양이", "소파", "시장", "경제", "서울", "비", "음악", "기타", "뉴스", "도시"],
}


def corpus(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS["en" if i % 2 else "ko"]) for _ in range(6)) for i in range(n)]


def report(folder: Path) -> dict[str, Any]:
    """`damaged.answers(folder)` from a process of its own: a crash or a hang fails the test."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    run = subprocess.run(
        [sys.executable, "-m", "tests.helpers.damaged_index_files", str(folder)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, f"the reader died ({run.returncode}): {run.stderr[-2000:]}"
    return dict(json.loads(run.stdout.splitlines()[-1]))


def build(folder: Path, kind: str, seed: int, older: Path | None = None) -> None:
    """A collection saved in three sessions: 30 documents (a copy of the folder then goes to
    `older`), 10 more saved whole (dense-40-0, lexical-40-0), then 10 more (a dense tail,
    tail-50) and 2 deletions left unsaved, as a writer killed before its close would leave them."""
    texts = corpus(seed, 50)
    hnsw = {"segment_size": 16}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(live_index, "TAIL_EVERY", 5)
        encoder = damaged.TrigramEncoder()
        with Collection.create(folder, encoder=encoder, index=kind, tokenizer="word", hnsw=hnsw) as col:
            col.add([f"d{i}" for i in range(30)], texts[:30])
            col.flush()
        if older is not None:
            shutil.copytree(folder, older)
        with Collection.open(folder, encoder=encoder) as col:
            col.add([f"d{i}" for i in range(30, 40)], texts[30:40])
            col.flush()
        col = Collection.open(folder, encoder=encoder)
        col.add([f"d{i}" for i in range(40, 50)], texts[40:50])
        col.delete(["d3", "d33"])
        col.close(save=False)


@pytest.fixture(scope="module")
def collections(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Per index kind: the collection, another with the same shape and other texts, an older copy
    of the first, and what readers of the first and of the older copy answer."""
    root = tmp_path_factory.mktemp("damaged")
    made: dict[str, Any] = {}
    for kind in ("exact", "hnsw"):
        folder, other, older = root / kind, root / f"{kind}-other", root / f"{kind}-older"
        build(folder, kind, seed=1, older=older)
        build(other, kind, seed=2)
        made[kind] = {"folder": folder, "other": other, "older": older}
        made[kind]["want"] = report(folder)
        made[kind]["want_older"] = report(older)
        assert made[kind]["want"]["problems"] == [] and made[kind]["want"]["warnings"] == []
    return made


def target(folder: Path, file: str, kind: str) -> Path:
    """The file of kind `file` in the collection folder."""
    if file == "dense":
        return folder / f"dense-40-0.{kind}"
    if file == "graph segment":  # the middle one of three
        return folder / f"dense-40-0.{kind}.seg-1"
    if file == "graph manifest":
        return folder / f"dense-40-0.{kind}.manifest"
    if file == "tail":
        return folder / f"dense-40-0.{kind}.tail-50"
    if file == "manifest":
        return folder / "lexical" / "lexical-40-0.idx"
    return sorted((folder / "lexical").glob("seg-*.idx"))[0]


# (file kind, damage, its array for row damages), per index kind: the array files take every damage,
# an HNSW file (no rows to reach) flips, cuts, swaps and FIFOs.
ARRAY_DAMAGES = ["flip", "truncate", "permute", "nan", "swap", "fifo"]
CASES = [
    *[("exact", "dense", d) for d in ARRAY_DAMAGES],
    *[("exact", "tail", d) for d in ARRAY_DAMAGES],
    *[("exact", "manifest", d) for d in ["flip", "truncate", "zero", "swap", "fifo"]],
    *[("exact", "lexical segment", d) for d in ["flip", "truncate", "permute", "swap", "fifo"]],
    *[("hnsw", "dense", d) for d in ["flip", "truncate", "swap", "fifo"]],
    *[("hnsw", "graph segment", d) for d in ["flip", "truncate", "swap", "fifo"]],
    *[("hnsw", "graph segment", d) for d in ["delete", "extra", "reorder"]],
    *[("hnsw", "graph manifest", d) for d in ["flip", "truncate", "swap", "fifo", "delete"]],
    *[("hnsw", "tail", d) for d in ARRAY_DAMAGES],
]
ROWS = {"dense": "vectors", "tail": "vectors", "manifest": "alive", "lexical segment": "labels"}


def damage(name: str, file: str, other: Path) -> Callable[[Path], None]:
    if name == "swap":
        return damaged.swapped_from(other)
    if name == "permute":
        return lambda path: damaged.permute_rows(path, ROWS[file])
    if name == "nan":
        return lambda path: damaged.nan_rows(path, ROWS[file])
    if name == "zero":
        return lambda path: damaged.zero(path, ROWS[file])
    return damaged.DAMAGES[name]


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "file", "how"), CASES, ids=["-".join(c) for c in CASES])
def test_a_damaged_file_is_set_aside_and_answers_do_not_change(
    collections: dict[str, Any], tmp_path: Path, kind: str, file: str, how: str
) -> None:
    made = collections[kind]
    folder = tmp_path / "c"
    shutil.copytree(made["folder"], folder)
    path = target(folder, file, kind)
    other = target(made["other"], file, kind)
    if file == "lexical segment":  # the other collection's segment under this one's name
        other = sorted((made["other"] / "lexical").glob("seg-*.idx"))[0]
    assert path.is_file() and other.is_file()
    if file.startswith("graph"):
        assert len(list(folder.glob("dense-40-0.hnsw.seg-*"))) == 2  # a middle segment and a last
    damage(how, file, other)(path)
    got = report(folder)
    assert got["answers"] == made["want"]["answers"]
    assert got["problems"] == []
    assert len(got["warnings"]) == 1 and "damaged index file" in got["warnings"][0], got["warnings"]
    assert not path.exists()  # set aside, beside it (a deleted file: its graph's other files)
    aside = target(folder, "dense", kind) if how == "delete" else path
    assert list(aside.parent.glob(aside.name + ".bad-*"))
    again = report(folder)  # the next reader finds nothing wrong, and says nothing
    assert again["answers"] == made["want"]["answers"] and again["warnings"] == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["exact", "hnsw"])
def test_files_newer_than_their_store_are_set_aside(
    collections: dict[str, Any], tmp_path: Path, kind: str
) -> None:
    """The store restored from an older copy, its index files left: they cover documents the store
    does not hold, so they are set aside and the index rebuilt from the store."""
    made = collections[kind]
    folder = tmp_path / "c"
    shutil.copytree(made["folder"], folder)
    for name in ("collection.db", "collection.db-wal", "collection.db-shm"):
        (folder / name).unlink(missing_ok=True)
        if (made["older"] / name).exists():
            shutil.copy(made["older"] / name, folder / name)
    got = report(folder)
    assert got["answers"] == made["want_older"]["answers"] and got["problems"] == []
    assert any(f"dense-40-0.{kind}" in line for line in got["warnings"])
    assert any("lexical-40-0.idx" in line for line in got["warnings"])
    assert not list(folder.glob(f"dense-40-0.{kind}")) and list(folder.glob(f"dense-40-0.{kind}.bad-*"))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["exact", "hnsw"])
def test_files_of_an_older_munjang_are_removed_and_rebuilt(
    collections: dict[str, Any], tmp_path: Path, kind: str
) -> None:
    """Files written before checksums cannot be verified: they are removed (not kept: a large
    matrix would double the folder) and the indexes rebuilt from the store, answering the same."""
    made = collections[kind]
    folder = tmp_path / "c"
    shutil.copytree(made["folder"], folder)
    files = [p for p in (*folder.glob("dense-*"), *(folder / "lexical").iterdir())]
    for path in files:
        damaged.first_format(path)
    got = report(folder)
    assert got["answers"] == made["want"]["answers"] and got["problems"] == []
    assert got["warnings"] and all("older munjang" in line for line in got["warnings"])
    assert not list(folder.glob("dense-*")) and not list(folder.glob("**/*.bad-*"))
    assert not list((folder / "lexical").glob("lexical-*"))


def test_every_flipped_byte_of_an_array_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.arrays"
    rng = np.random.default_rng(0)
    write_arrays(path, {"labels": np.arange(7), "vectors": rng.standard_normal((7, 5)).astype(np.float32)})
    whole = path.read_bytes()
    for at in range(len(whole)):
        data = bytearray(whole)
        data[at] ^= 0x10
        path.write_bytes(bytes(data))
        with pytest.raises(ArrayFileError):
            read_arrays(path)
    for cut in (0, 9, 30, len(whole) - 1):
        path.write_bytes(whole[:cut])
        with pytest.raises(ArrayFileError):
            read_arrays(path)
    path.write_bytes(whole + b"\0")
    with pytest.raises(ArrayFileError):
        read_arrays(path)


def test_a_fifo_or_a_folder_in_place_of_an_index_file_is_refused_at_once(tmp_path: Path) -> None:
    """Opening a FIFO for reading would wait for a writer forever; it is refused before."""
    fifo, folder = tmp_path / "f", tmp_path / "d"
    os.mkfifo(fifo)
    folder.mkdir()
    for path in (fifo, folder):
        with pytest.raises(ArrayFileError, match="not a regular file"):
            read_arrays(path)
        with pytest.raises(IndexFileError, match="not a regular file"):
            HNSWIndex.load(path)


def test_an_hnsw_file_is_verified_before_usearch_reads_it(tmp_path: Path) -> None:
    """Each flipped region of a graph file is refused by its checksum (in a process of its own, so
    a usearch crash on a file that got through would fail the test, not end the run)."""
    code = """
import sys
import numpy as np
from pathlib import Path
from munjang.search.index.ann import HNSWIndex, IndexFileError
path = Path(sys.argv[1])
index = HNSWIndex(8)
index.add(np.arange(200), np.random.default_rng(0).standard_normal((200, 8)))
index.save(path, {"collection": "a"})
whole = path.read_bytes()
refused = 0
for at in range(0, len(whole), max(1, len(whole) // 400)):
    data = bytearray(whole)
    data[at] ^= 0x55
    path.write_bytes(bytes(data))
    for view in (False, True):
        try:
            HNSWIndex.load(path, view=view)
        except IndexFileError:
            refused += 1
path.write_bytes(whole)
try:
    HNSWIndex.load(path, expect={"collection": "b"})
except IndexFileError as e:
    print("other:", e)
print("refused", refused, len(range(0, len(whole), max(1, len(whole) // 400))) * 2)
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "g.hnsw")], env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.split("\n")
    assert "written for collection 'a', not 'b'" in lines[0]
    _, refused, tried = lines[1].split()
    assert refused == tried


@pytest.mark.parametrize("kind", ["exact", "hnsw"])
def test_check_names_each_damaged_file_and_a_writer_saves_whole_ones_again(
    tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`check()` verifies every saved file, those damaged after the open too, and names each (the
    tail, mapped and overwritten in place, also shows in the index's labels); a writer that opens a
    damaged collection rebuilds and saves files that verify."""
    folder = tmp_path / "c"
    build(folder, kind, seed=1)
    encoder = damaged.TrigramEncoder()
    with Collection.open(folder, encoder=encoder, readonly=True) as reader:
        assert reader.check() == []
        tail, manifest = target(folder, "tail", kind), target(folder, "manifest", kind)
        damaged.flip(tail)
        damaged.fifo(manifest)
        graph = [target(folder, "graph segment", kind)] if kind == "hnsw" else []
        for path in graph:
            damaged.truncate(path)
        found = reader.check()
    for path in (tail, manifest, *graph):
        assert sum(str(path) in line for line in found) == 1, found
    caplog.clear()
    with Collection.open(folder, encoder=encoder) as writer:  # sets them aside, rebuilds, saves
        writer.add(["late"], ["고양이 guitar 시장"])
        writer.flush()
        want = [[(h.id, round(h.score, 4)) for h in writer.search(q, k=5)] for q in damaged.QUERIES]
    assert any("damaged index file" in r.getMessage() for r in caplog.records)
    assert list(folder.glob(f"dense-51-2.{kind}")) and list((folder / "lexical").glob("lexical-51-2.idx"))
    caplog.clear()
    with Collection.open(folder, encoder=encoder, readonly=True) as reader:
        assert reader.check() == [] and not caplog.records
        assert [[(h.id, round(h.score, 4)) for h in reader.search(q, k=5)] for q in damaged.QUERIES] == want


def test_index_info_check_lists_the_files_set_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers.cli import run_cli

    folder = tmp_path / "c"
    build(folder, "exact", seed=1)
    damaged.flip(target(folder, "dense", "exact"))
    code, out, _ = run_cli(["index", "info", str(folder), "--check", "--json"], capsys, monkeypatch)
    described = json.loads(out)
    assert code == 0 and described["problems"] == []
    names = sorted(Path(p).name.split(".bad-")[0] for p in described["set_aside"])
    assert names == ["dense-40-0.exact", "dense-40-0.exact.tail-50"]  # the matrix and its tail


def test_a_standalone_hnsw_file_of_an_older_munjang_still_loads(tmp_path: Path) -> None:
    """`HNSWIndex.load` without `expect` (the public API) reads a file saved before checksums, as
    it did; a collection's graph (loaded with `expect`) of that age is refused, and rebuilt."""
    path = tmp_path / "g.hnsw"
    index = HNSWIndex(4)
    index.add(np.arange(20), np.random.default_rng(1).standard_normal((20, 4)))
    index.save(path)
    damaged.first_format(path)
    assert len(HNSWIndex.load(path)) == 20
    with pytest.raises(IndexFileError, match="without a checksum"):
        HNSWIndex.load(path, expect={"collection": ""})


def test_a_graph_segment_deleted_from_the_middle_is_named_by_check_and_set_aside_on_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader's `check()` names the missing middle segment (its manifest lists it); the next open
    sets the graph aside and rebuilds it, and `index info --check` lists what was set aside."""
    from tests.helpers.cli import run_cli

    folder = tmp_path / "c"
    build(folder, "hnsw", seed=1)
    middle = target(folder, "graph segment", "hnsw")
    assert middle.with_name("dense-40-0.hnsw.seg-2").is_file()  # seg-1 is a middle one
    with Collection.open(folder, encoder=damaged.TrigramEncoder(), readonly=True) as reader:
        assert reader.check() == []
        middle.unlink()
        found = reader.check()
    graph = folder / "dense-40-0.hnsw"
    assert found == [f"dense index file {graph}: segment {middle.name} named in its manifest is missing"]
    code, out, _ = run_cli(["index", "info", str(folder), "--check", "--json"], capsys, monkeypatch)
    described = json.loads(out)
    assert code == 0 and described["problems"] == []
    names = sorted(Path(p).name.split(".bad-")[0] for p in described["set_aside"])
    assert names == [
        "dense-40-0.hnsw",
        "dense-40-0.hnsw.manifest",
        "dense-40-0.hnsw.seg-2",
        "dense-40-0.hnsw.tail-50",
    ]
