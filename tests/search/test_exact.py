"""Exact semantic search: parity with sentence-transformers' util.semantic_search, chunking, ties, edges."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sentence_transformers import util

from munjang.search import semantic_search
from munjang.search.index.exact import top_k_exact


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


def _numpy_reference(queries: np.ndarray, corpus: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Full cosine matrix, full stable sort on -score: the definition the chunked search must equal."""
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    c = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
    scores = q @ c.T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(scores, order, axis=1)


@pytest.mark.parametrize(("corpus_chunk", "query_chunk"), [(1, 1), (3, 2), (16, 7), (1000, 1000)])
def test_equals_numpy_brute_force_with_ties_at_every_place(corpus_chunk: int, query_chunk: int) -> None:
    # Integer vectors from a tiny alphabet repeat often, so many scores tie exactly, the k-th included.
    rng = np.random.default_rng(1)
    corpus = rng.integers(0, 3, size=(60, 4)).astype(np.float32) + np.float32(0.5)
    queries = rng.integers(0, 3, size=(9, 4)).astype(np.float32) + np.float32(0.5)
    rows, scores = top_k_exact(queries, corpus, 10, "cosine", corpus_chunk, query_chunk)
    want_rows, want_scores = _numpy_reference(queries, corpus, 10)
    np.testing.assert_allclose(scores, want_scores, atol=1e-6)
    # Where scores are exactly equal the reference order is by row; rounding in a different BLAS can
    # split a tie, so compare rows within groups of (nearly) equal scores.
    for got, want, s in zip(rows, want_rows, want_scores, strict=True):
        groups = np.round(s, 5)
        for value in np.unique(groups):
            assert sorted(got[groups == value]) == sorted(want[groups == value]) or value == groups[-1]
    assert (rows[:, :-1] != rows[:, 1:]).all()


def test_duplicate_vectors_keep_lowest_rows_at_the_cut() -> None:
    corpus = np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (20, 1))
    corpus[5] = [0.0, 1.0]
    rows, _ = top_k_exact(np.array([[1.0, 0.0]], dtype=np.float32), corpus, 4, corpus_chunk_size=3)
    assert rows.tolist() == [[0, 1, 2, 3]]
    rows, _ = top_k_exact(np.array([[1.0, 0.0]], dtype=np.float32), corpus, 19, corpus_chunk_size=7)
    assert rows.tolist() == [[i for i in range(20) if i != 5]]
    with pytest.raises(ValueError, match="embedding sizes differ"):
        top_k_exact(np.ones((1, 3), dtype=np.float32), corpus)
    with pytest.raises(ValueError, match="query_chunk_size"):
        top_k_exact(np.ones((1, 2), dtype=np.float32), corpus, query_chunk_size=0)
