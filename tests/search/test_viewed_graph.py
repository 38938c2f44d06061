"""A viewed graph with changes beside it answers as an index holding the changed vectors: a saved
HNSW index of three segments (small, so their search is exhaustive), mapped, then added to,
removed from (in the graph and in the tail), replaced, with tied scores; no file is ever written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from munjang.search.index.exact import ExactIndex
from munjang.search.index.segmented_graph import SegmentedGraph
from munjang.search.index.viewed_graph import ViewedGraph


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_a_viewed_graph_with_changes_answers_as_exact(tmp_path: Path, metric: str) -> None:
    rng = np.random.default_rng(0)
    dim = 8
    vectors = rng.standard_normal((200, dim)).astype(np.float32)
    vectors[50:55] = vectors[40]  # tied scores: the lower label first
    labels = np.arange(1, 201, dtype=np.int64) * 3
    hnsw = {"connectivity": 64, "expansion_add": 512, "expansion_search": 512, "threads": 1}
    graph = SegmentedGraph(dim, metric, segment_size=70, **hnsw)
    graph.add(labels, vectors)
    graph.save(tmp_path / "g.hnsw")
    files = sorted(tmp_path.glob("g.hnsw*"))
    assert [f.name for f in files] == ["g.hnsw", "g.hnsw.manifest", "g.hnsw.seg-1", "g.hnsw.seg-2"]
    before = [f.read_bytes() for f in files]
    viewed = ViewedGraph(SegmentedGraph.load(tmp_path / "g.hnsw", view=True))
    assert viewed.graph.is_view and [len(s) for s in viewed.graph.segments] == [70, 70, 60]
    reference = ExactIndex(dim, metric)
    reference.add(labels, vectors)

    def same(k: int) -> None:
        queries = np.concatenate([rng.standard_normal((4, dim)).astype(np.float32), vectors[40:41]])
        want = reference.search(queries, k)
        got = viewed.search(queries, k)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)
        assert len(viewed) == len(reference)
        np.testing.assert_array_equal(viewed.ids(), reference.ids())

    same(10)
    extra = rng.standard_normal((30, dim)).astype(np.float32)
    extra[0] = vectors[40]  # a tie between the graph and the tail
    for index in (reference, viewed):
        index.add(np.arange(1000, 1030), extra)
    same(10)
    for index in (reference, viewed):
        assert index.remove([3, 123, 1005, 999_999]) == 3  # two in the graph, one in the tail
    assert viewed.dead == 2 and 3 not in viewed and 1005 not in viewed and 6 in viewed
    same(10)
    everything = viewed.search(vectors[:2], 250)[0]  # more than are held: all of them, padded with -1
    for row in everything:
        np.testing.assert_array_equal(np.sort(row[row >= 0]), reference.ids())
        assert (row[len(reference) :] == -1).all()
    replaced = rng.standard_normal((1, dim)).astype(np.float32)
    for index in (reference, viewed):
        index.add([9], replaced)  # a graph label given a new vector
    same(5)
    np.testing.assert_allclose(viewed.get_vectors([9]), reference.vectors()[reference.ids() == 9], rtol=1e-6)
    with pytest.raises(ValueError, match="not in the index"):
        viewed.get_vectors([3])
    assert [f.read_bytes() for f in files] == before and viewed.graph.is_view
