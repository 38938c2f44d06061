"""Exact semantic search: parity with sentence-transformers' util.semantic_search, chunking, ties, edges."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sentence_transformers import util

from munjang.search import semantic_search


@pytest.mark.parametrize("chunk", [7, 100_000])
def test_matches_sentence_transformers(chunk: int) -> None:
    rng = np.random.default_rng(0)
    queries = rng.normal(size=(5, 32)).astype(np.float32)
    corpus = rng.normal(size=(50, 32)).astype(np.float32)
    ours = semantic_search(queries, corpus, top_k=10, corpus_chunk_size=chunk)
    ref = util.semantic_search(torch.from_numpy(queries), torch.from_numpy(corpus), top_k=10)
    for got, want in zip(ours, ref, strict=True):
        assert [h.corpus_id for h in got] == [w["corpus_id"] for w in want]
        np.testing.assert_allclose([h.score for h in got], [w["score"] for w in want], atol=1e-6)


def test_other_score_functions_and_edges() -> None:
    corpus = np.array([[0.0, 1.0], [1.0, 0.0], [3.0, 0.0], [1.0, 0.0]], dtype=np.float32)
    query = np.array([1.0, 0.0], dtype=np.float32)
    assert [h.corpus_id for h in semantic_search(query, corpus, top_k=2, score_function="dot")[0]] == [2, 1]
    # Euclidean: rows 1 and 3 tie at distance 0 (lower id first), then row 0 at sqrt(2) before row 2 at 2.
    hits = semantic_search(query, corpus, top_k=3, score_function="euclidean", corpus_chunk_size=2)[0]
    assert [h.corpus_id for h in hits] == [1, 3, 0] and hits[0].score == 0.0
    assert len(semantic_search(query, corpus, top_k=100)[0]) == 4
    assert semantic_search(query, np.zeros((0, 2), dtype=np.float32)) == [[]]
    with pytest.raises(ValueError, match="top_k"):
        semantic_search(query, corpus, top_k=0)
