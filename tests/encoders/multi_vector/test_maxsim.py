"""MaxSim scoring against sentence-transformers' maxsim, and the flat token store's brute-force search."""

from __future__ import annotations

import numpy as np
import torch

from munjang.encoders.multi_vector import maxsim, maxsim_pairwise
from munjang.encoders.multi_vector.flat import FlatTokens, brute_force_top_k


def token_sets(n: int, dim: int = 8, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((int(t), dim)).astype(np.float32) for t in rng.integers(1, 12, size=n)]


def test_maxsim_matches_sentence_transformers() -> None:
    from sentence_transformers.util.similarity import maxsim as st_maxsim

    queries, docs = token_sets(4, seed=1), token_sets(9, seed=2)
    expected = st_maxsim([torch.from_numpy(q) for q in queries], [torch.from_numpy(d) for d in docs])
    np.testing.assert_allclose(maxsim(queries, docs), expected.numpy(), rtol=1e-5, atol=1e-5)
    lengths = np.array([len(q) for q in queries])[:, None]
    np.testing.assert_allclose(
        maxsim(queries, docs, length_normalize=True), expected.numpy() / lengths, rtol=1e-5
    )
    # chunking the documents changes nothing
    np.testing.assert_allclose(
        maxsim(queries, docs, chunk_elements=10), expected.numpy(), rtol=1e-5, atol=1e-5
    )


def test_pairwise_is_the_diagonal() -> None:
    queries, docs = token_sets(5, seed=3), token_sets(5, seed=4)
    np.testing.assert_allclose(maxsim_pairwise(queries, docs), np.diag(maxsim(queries, docs)), rtol=1e-5)


def test_mismatched_dimensions_are_refused() -> None:
    import pytest

    with pytest.raises(ValueError, match="dimension"):
        maxsim([np.ones((2, 4))], [np.ones((3, 5))])


def test_brute_force_top_k_over_a_flat_store() -> None:
    queries, docs = token_sets(6, seed=5), token_sets(40, seed=6)
    store = FlatTokens.from_sets(docs, np.float32)
    rows, scores = brute_force_top_k(queries, store, 5, chunk_elements=50)
    full = maxsim(queries, docs)
    for i in range(len(queries)):
        np.testing.assert_allclose(scores[i], np.sort(full[i])[::-1][:5], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(full[i, rows[i]], scores[i], rtol=1e-5, atol=1e-5)
