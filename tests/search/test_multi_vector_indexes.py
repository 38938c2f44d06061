"""PlaidIndex and MuveraIndex against brute-force MaxSim on clustered token sets."""

from __future__ import annotations

import numpy as np
import pytest

from munjang.encoders.multi_vector import maxsim
from munjang.encoders.multi_vector.flat import FlatTokens, brute_force_top_k
from munjang.search.index.muvera import FixedDimensionalEncoder, MuveraIndex
from munjang.search.index.plaid import PlaidIndex


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data() -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(0)
    topics = unit(rng.standard_normal((64, 32)))
    docs = []
    for n in rng.integers(0, 20, size=600):
        chosen = topics[rng.integers(64, size=3)]
        docs.append(unit(chosen[rng.integers(3, size=n)] + 0.1 * rng.standard_normal((n, 32))))
    queries = [
        unit(topics[rng.integers(64, size=2)][rng.integers(2, size=6)] + 0.1 * rng.standard_normal((6, 32)))
        for _ in range(20)
    ]
    return docs, queries


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth, strict=True)]))


@pytest.mark.parametrize("index", [PlaidIndex(n_centroids=64, nprobe=4, rerank=64), MuveraIndex(rerank=64)])
def test_recall_against_brute_force(data, index) -> None:
    docs, queries = data
    truth, _ = brute_force_top_k(queries, FlatTokens.from_sets(docs, np.float32), 10)
    rows, scores = index.build(docs).search(queries, 10)
    assert recall(rows, truth) >= 0.9
    exact = maxsim(queries, docs)
    for i in range(len(queries)):  # the returned scores are MaxSim (PLAID: of int8-rebuilt tokens)
        np.testing.assert_allclose(scores[i], exact[i, rows[i]], atol=0.05)
    assert index.memory_bytes() > 0 and len(index) == len(docs)


def test_plaid_scores_every_candidate_when_rerank_covers_all(data) -> None:
    docs, queries = data
    index = PlaidIndex(n_centroids=8, nprobe=8, rerank=10_000).build(docs)
    truth, _ = brute_force_top_k(queries, FlatTokens.from_sets(docs, np.float32), 10)
    assert recall(index.search(queries, 10)[0], truth) >= 0.95  # every centroid probed: only int8 loss


def test_fde_dot_product_tracks_maxsim(data) -> None:
    docs, queries = data
    encoder = FixedDimensionalEncoder(32, repetitions=8, bits=3, proj_dim=32)
    approx = encoder.queries(queries) @ encoder.documents(FlatTokens.from_sets(docs, np.float32)).T
    exact = maxsim(queries, docs)
    correlation = np.mean([np.corrcoef(a, e)[0, 1] for a, e in zip(approx, exact, strict=True)])
    assert correlation > 0.6  # an approximation: far from exact, far above chance (0)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        PlaidIndex(nprobe=0)
    with pytest.raises(ValueError, match="no documents"):
        MuveraIndex().build([])
    with pytest.raises(ValueError, match="k must be"):
        PlaidIndex().build([np.ones((2, 4), np.float32)]).search_one(np.ones((1, 4)), 0)
