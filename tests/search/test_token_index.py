"""The multi-vector token index: exact MaxSim below its limit, PLAID (with an exact tail) above it,
deletions and filters honoured on both paths."""

from __future__ import annotations

import numpy as np
import pytest

from munjang.encoders.multi_vector.flat import FlatTokens, brute_force_top_k
from munjang.search.index.token_index import TokenIndex, exact_scores


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def clustered_sets(n: int, tokens: tuple[int, int] = (4, 30), seed: int = 0) -> list[np.ndarray]:
    """Token sets over 64 topics (as ColBERT tokens cluster): each set draws its tokens near three
    topics, with a little noise (the data of test_multi_vector_indexes.py)."""
    rng = np.random.default_rng(seed)
    topics = unit(np.random.default_rng(0).standard_normal((64, 32)))
    out = []
    for size in rng.integers(*tokens, size=n):
        chosen = topics[rng.integers(64, size=3)]
        out.append(unit(chosen[rng.integers(3, size=size)] + 0.1 * rng.standard_normal((size, 32))))
    return out


def test_exact_scores_equal_brute_force_in_chunks(monkeypatch) -> None:
    import munjang.search.index.token_index as token_index

    sets = clustered_sets(40, seed=1)
    queries = clustered_sets(3, seed=2)
    flat = FlatTokens.from_sets(sets)
    monkeypatch.setattr(token_index, "CHUNK_ELEMENTS", 500)  # many chunks
    got = exact_scores(queries, flat.vectors, flat.offsets, np.arange(len(sets)))
    rows, want = brute_force_top_k(queries, flat, k=len(sets))
    for q in range(len(queries)):
        np.testing.assert_allclose(got[q, rows[q]], want[q], rtol=1e-5)


def test_plaid_path_agrees_with_exact_at_recall_at_10() -> None:
    sets = clustered_sets(600)
    queries = clustered_sets(20, tokens=(6, 7), seed=3)
    labels = np.arange(1, 601, dtype=np.int64) * 3
    exact, approx = TokenIndex(32, exact_limit=10_000), TokenIndex(32, exact_limit=100)
    for index in (exact, approx):
        index.add(labels[:500], sets[:500])
    approx.search(queries[:1], 10)  # builds PLAID over 500 documents
    assert approx.plaid is not None and approx.plaid_size == 500
    for index in (exact, approx):
        index.add(labels[500:], sets[500:])  # a tail of 100 (not over the rebuild share): scored exactly
        index.remove(labels[::7])
    allowed = labels[labels % 2 == 0]
    for allow in (None, allowed):
        want = exact.search(queries, 10, allow)
        got = approx.search(queries, 10, allow)
        assert approx.plaid_size == 500, "the tail and the dead stay under the rebuild share"
        recall = np.mean(
            [len({x for x, _ in g} & {x for x, _ in w}) / 10 for g, w in zip(got, want, strict=True)]
        )
        assert recall >= 0.95
        dead = set(labels[::7].tolist())
        for hits in got:
            assert len(hits) == 10 and not {x for x, _ in hits} & dead
            assert allow is None or {x for x, _ in hits} <= set(allow.tolist())
    tail_best = [max(w, key=lambda h: h[1]) for w in exact.search(queries, 10)]
    for best, hits in zip(tail_best, approx.search(queries, 10), strict=True):
        if best[0] > labels[499]:  # a tail document that is the best match is found exactly
            assert hits[0] == (best[0], pytest.approx(best[1], rel=1e-5))


def test_plaid_is_rebuilt_when_the_tail_grows() -> None:
    sets = clustered_sets(300, seed=4)
    index = TokenIndex(32, exact_limit=50)
    index.add(np.arange(100), sets[:100])
    index.search(sets[:1], 5)
    assert index.plaid_size == 100
    index.add(np.arange(100, 300), sets[100:])
    index.search(sets[:1], 5)
    assert index.plaid_size == 300


def test_mean_divides_by_query_tokens_and_matrix_reads_back() -> None:
    sets = clustered_sets(5, seed=5)
    index = TokenIndex(32)
    index.add(np.arange(10, 15), sets)
    q = sets[0][:4]
    total = dict(index.search([q], 5)[0])
    mean = dict(index.search([q], 5, mean=True)[0])
    assert mean.keys() == total.keys()
    assert all(mean[x] == pytest.approx(total[x] / 4, abs=1e-6) for x in total)
    np.testing.assert_allclose(index.matrix(12), sets[2], atol=1e-3)
    index.remove(np.array([12]))
    assert index.matrix(12) is None and 12 not in dict(index.search([q], 5)[0])
