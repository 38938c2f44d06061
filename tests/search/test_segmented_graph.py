"""An HNSW index kept as graphs of bounded size: it answers as one index (exact search as the
reference, on graphs small enough to be searched exhaustively), a save writes only the segments that
changed (the others are links to the files already there), views are copied in only when edited,
and a collection built on it (writer, reader, a save killed midway) finds every passage."""

from __future__ import annotations

import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from munjang.search import Collection
from munjang.search.index.ann import HNSWIndex
from munjang.search.index.exact import ExactIndex
from munjang.search.index.segmented_graph import SegmentedGraph, manifest_file, segment_file

HNSW = {"connectivity": 64, "expansion_add": 512, "expansion_search": 512, "threads": 1}


def _agree(graph: SegmentedGraph, reference: ExactIndex, queries: np.ndarray, k: int) -> None:
    want, got = reference.search(queries, k), graph.search(queries, k)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)
    assert len(graph) == len(reference)
    np.testing.assert_array_equal(graph.ids(), reference.ids())


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_segments_fill_in_turn_and_answer_as_one_index(metric: str) -> None:
    rng = np.random.default_rng(1)
    graph, reference = SegmentedGraph(8, metric, segment_size=40, **HNSW), ExactIndex(8, metric)
    vectors = rng.standard_normal((130, 8)).astype(np.float32)
    for start in range(0, 130, 25):  # batches that straddle segment ends
        labels = np.arange(start, min(start + 25, 130))
        graph.add(labels, vectors[labels])
        reference.add(labels, vectors[labels])
    assert [len(s) for s in graph.segments] == [40, 40, 40, 10]
    queries = np.concatenate([rng.standard_normal((3, 8)), vectors[[5, 77]]]).astype(np.float32)
    _agree(graph, reference, queries, 12)
    replaced = rng.standard_normal((2, 8)).astype(np.float32)
    for index in (graph, reference):  # labels of the first segment given new vectors
        index.add([3, 4], replaced)
        assert index.remove([10, 90, 5000]) == 2
    assert [len(s) for s in graph.segments] == [37, 40, 39, 12] and 10 not in graph and 3 in graph
    _agree(graph, reference, queries, 12)
    np.testing.assert_allclose(graph.get_vectors([3, 100]), np.stack([replaced[0], vectors[100]]), rtol=1e-6)
    with pytest.raises(ValueError, match="not in the index"):
        graph.get_vectors([10])
    with pytest.raises(ValueError, match="segment_size"):
        SegmentedGraph(8, metric, segment_size=0)


def test_one_query_searches_its_segments_side_by_side_and_a_forked_child_still_searches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(4)
    graph, reference = SegmentedGraph(8, segment_size=30, **HNSW), ExactIndex(8, "cosine")
    vectors = rng.standard_normal((100, 8)).astype(np.float32)
    graph.add(np.arange(100), vectors)
    reference.add(np.arange(100), vectors)
    threads: list[str] = []
    search = HNSWIndex.search

    def spy(self: HNSWIndex, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        threads.append(threading.current_thread().name)
        return search(self, queries, k)

    monkeypatch.setattr(HNSWIndex, "search", spy)
    queries = rng.standard_normal((3, 8)).astype(np.float32)
    for query in (queries[0], queries[:1]):  # one query, 1-D or one row: on the pool
        threads.clear()
        _agree(graph, reference, query if query.ndim == 2 else query[None], 7)
        assert len(threads) == 4 and all(t.startswith("munjang-segments") for t in threads)
    threads.clear()
    _agree(graph, reference, queries, 7)  # a batch: segment by segment on this thread
    assert threads == [threading.current_thread().name] * 4
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the pool's threads do not exist here; a search must not wait on them
        signal.alarm(30)  # a child left waiting dies, and the assertion below fails
        found = graph.search(queries[0], 7)[0][0]
        os.write(write, found.astype(np.int64).tobytes())
        os._exit(0)
    os.close(write)
    _, status = os.waitpid(child, 0)
    got = np.frombuffer(os.read(read, 1024), dtype=np.int64)
    os.close(read)
    assert status == 0
    np.testing.assert_array_equal(got, reference.search(queries[:1], 7)[0][0])


def test_a_save_writes_only_changed_segments_and_views_are_copied_in_when_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(2)
    vectors = rng.standard_normal((100, 8)).astype(np.float32)
    graph, reference = SegmentedGraph(8, segment_size=30, **HNSW), ExactIndex(8, "cosine")
    for index in (graph, reference):
        index.add(np.arange(100), vectors)
    first = tmp_path / "dense-100-0.hnsw"
    graph.save(first)
    files = [segment_file(first, n) for n in range(4)]
    assert sorted(tmp_path.iterdir()) == sorted([*files, manifest_file(first)])
    before = [f.read_bytes() for f in files]

    mapped = SegmentedGraph.load(first, view=True, segment_size=30)
    assert mapped.is_view and [len(s) for s in mapped.segments] == [30, 30, 30, 10]
    _agree(mapped, reference, vectors[:4], 7)
    extra = rng.standard_normal((5, 8)).astype(np.float32)
    for index in (mapped, reference):
        index.add(np.arange(100, 105), extra)  # into the last segment only
        index.remove([40])  # from the second
    assert [s.is_view for s in mapped.segments] == [True, False, True, False]
    _agree(mapped, reference, np.concatenate([vectors[:3], extra[:1]]), 7)
    assert [f.read_bytes() for f in files] == before  # the mapped files are never written

    second = tmp_path / "dense-105-1.hnsw"
    mapped.save(second)
    again = [segment_file(second, n) for n in range(4)]
    same_file = [os.stat(a).st_ino == os.stat(b).st_ino for a, b in zip(files, again, strict=True)]
    assert same_file == [True, False, True, False]  # unchanged segments linked, changed ones written
    for old in (*files, manifest_file(first)):
        old.unlink()  # as the collection drops the older save
    _agree(SegmentedGraph.load(second, segment_size=30), reference, vectors[:4], 7)
    assert mapped.segments[0].is_view and len(mapped.search(vectors[:1], 3)[0][0]) == 3  # still mapped

    load = HNSWIndex.load

    def removed_meanwhile(path: Path, **kw: object) -> HNSWIndex:
        if path.name.endswith(".seg-2"):
            second.unlink()  # a writer's newer save removed the graph while it was being opened
        return load(path, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(HNSWIndex, "load", removed_meanwhile)
    with pytest.raises(FileNotFoundError, match="replaced while it was being opened"):
        SegmentedGraph.load(second, view=True)


def test_a_collection_on_segments_finds_every_passage_in_writers_and_readers(tmp_path: Path, encoder) -> None:
    texts = [f"passage {i} about {'music' if i % 2 else 'markets'} and topic {i % 7}" for i in range(23)]
    ids = [f"p{i}" for i in range(23)]
    exact = Collection.create(tmp_path / "exact", encoder=encoder)
    exact.add(ids, texts)
    folder = tmp_path / "seg"
    with Collection.create(folder, encoder=encoder, index="hnsw", hnsw={**HNSW, "segment_size": 5}) as c:
        c.add(ids[:12], texts[:12])
        c.add(ids[12:], texts[12:])
    saved = sorted(p.name for p in folder.glob("dense-*"))
    segments = [f"dense-23-0.hnsw.seg-{n}" for n in range(1, 5)]
    assert saved == ["dense-23-0.hnsw", "dense-23-0.hnsw.manifest", *segments]
    inode = os.stat(folder / "dense-23-0.hnsw").st_ino
    reader = Collection.open(folder, encoder=encoder, readonly=True)

    def same(col: Collection) -> None:
        for query in ("music topic 3", "markets"):
            got = [(h.id, round(h.score, 4)) for h in col.search(query, k=8, mode="dense")]
            want = [(h.id, round(h.score, 4)) for h in exact.search(query, k=8, mode="dense")]
            assert got == want

    same(reader)
    with Collection.open(folder, encoder=encoder) as writer:
        writer.add(["late"], ["a late passage about music"])
        exact.add(["late"], ["a late passage about music"])
        orphans = [folder / "dense-99-0.hnsw.seg-1", folder / "dense-99-0.hnsw.manifest"]
        for orphan in orphans:
            orphan.write_bytes(b"left by a save killed before its first segment")
        same(writer)
    assert not any(orphan.exists() for orphan in orphans)
    assert os.stat(folder / "dense-24-0.hnsw").st_ino == inode  # the first segment was linked
    assert not (folder / "dense-23-0.hnsw").exists()
    same(reader)
    with Collection.open(folder, encoder=encoder) as writer:
        assert writer.check() == [] and writer.dense.index.is_view
    reader.close()
    exact.close()


def test_the_set_of_segments_is_checked_against_its_manifest(tmp_path: Path) -> None:
    """A segment deleted from the middle (the graph opened short, silently), one extra, two
    swapped, or the manifest lost: each refused before usearch reads a byte, and `verify` (what
    `index info --check` runs) names it; the whole set loads and verifies clean."""
    import shutil

    from munjang.search.index.ann import IndexFileError
    from munjang.search.index.array_file import read_arrays, write_arrays
    from munjang.search.index.segmented_graph import SegmentManifestError, verify
    from munjang.search.index.verified_file import DamagedIndexFile

    rng = np.random.default_rng(4)
    graph = SegmentedGraph(8, segment_size=30, **HNSW)
    graph.add(np.arange(100), rng.standard_normal((100, 8)).astype(np.float32))
    whole = tmp_path / "whole" / "g.hnsw"
    whole.parent.mkdir()
    graph.save(whole, {"collection": "c"}, watermark=[100, 0])
    assert len(SegmentedGraph.load(whole, expect={"collection": "c"}, watermark=[100, 0])) == 100
    assert verify(whole, {"collection": "c"}) == []
    with pytest.raises(DamagedIndexFile, match="written for watermark"):
        SegmentedGraph.load(whole, watermark=[90, 0])  # the set covers another watermark

    def damaged(name: str, damage: Any) -> Path:
        path = tmp_path / name / "g.hnsw"
        shutil.copytree(whole.parent, path.parent)
        damage(path)
        return path

    def swap(path: Path) -> None:
        one, two = segment_file(path, 1), segment_file(path, 2)
        first, second = one.read_bytes(), two.read_bytes()
        one.write_bytes(second)
        two.write_bytes(first)

    def relabel(path: Path) -> None:  # a manifest rewritten whole, whose label ranges are not the files'
        meta, arrays = read_arrays(manifest_file(path))
        first = np.array(arrays["first"])
        first[1] += 1
        write_arrays(manifest_file(path), {**arrays, "first": first}, meta)

    labels = damaged("relabelled", relabel)
    assert len(SegmentedGraph.load(labels)) == 100  # its files are the ones it names
    assert verify(labels, {"collection": "c"}) == [
        f"{segment_file(labels, 1)}: holds labels its manifest does not list"
    ]

    cases = {
        "deleted": (lambda p: segment_file(p, 2).unlink(), SegmentManifestError, "g.hnsw.seg-2 named in"),
        "extra": (
            lambda p: shutil.copy(segment_file(p, 3), segment_file(p, 4)),
            SegmentManifestError,
            "seg-4",
        ),
        "swapped": (swap, IndexFileError, "not the segment its manifest names"),
        "lost": (lambda p: manifest_file(p).unlink(), SegmentManifestError, "manifest: missing"),
    }
    for name, (damage, error, message) in cases.items():
        path = damaged(name, damage)
        with pytest.raises(error, match=message):
            SegmentedGraph.load(path, view=True)
        problems = verify(path, {"collection": "c"})  # swapped: both segments named
        assert len(problems) == (2 if name == "swapped" else 1), problems
        assert all(re.search(message, problem) for problem in problems), problems
