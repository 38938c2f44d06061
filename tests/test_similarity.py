"""munjang.similarity: parity with sentence-transformers' util and scipy, input and output kinds, shapes,
the sign convention (larger = more similar), and errors.

`munjang.similarity` is the module; its names are imported with `from munjang.similarity import ...`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist
from sentence_transformers import util

from munjang.similarity import (
    MATRIX_FUNCTIONS,
    PAIRWISE_FUNCTIONS,
    cos_sim,
    dot_score,
    euclidean_sim,
    manhattan_sim,
    pairwise_cos_sim,
    pairwise_dot_score,
    pairwise_euclidean_sim,
    pairwise_manhattan_sim,
    pairwise_similarity,
    similarity,
)

TOL = 1e-5
NAMES = ("cosine", "dot", "euclidean", "manhattan")

MATRIX: dict[str, Callable[[Any, Any], Any]] = {
    "cosine": cos_sim,
    "dot": dot_score,
    "euclidean": euclidean_sim,
    "manhattan": manhattan_sim,
}
PAIRWISE: dict[str, Callable[[Any, Any], Any]] = {
    "cosine": pairwise_cos_sim,
    "dot": pairwise_dot_score,
    "euclidean": pairwise_euclidean_sim,
    "manhattan": pairwise_manhattan_sim,
}
ST_MATRIX: dict[str, Callable[[Any, Any], torch.Tensor]] = {
    "cosine": util.cos_sim,
    "dot": util.dot_score,
    "euclidean": util.euclidean_sim,
    "manhattan": util.manhattan_sim,
}
ST_PAIRWISE: dict[str, Callable[[Any, Any], torch.Tensor]] = {
    "cosine": util.pairwise_cos_sim,
    "dot": util.pairwise_dot_score,
    "euclidean": util.pairwise_euclidean_sim,
    "manhattan": util.pairwise_manhattan_sim,
}


def scipy_matrix(a: np.ndarray, b: np.ndarray, fn: str) -> np.ndarray:
    """The reference, in float64: similarities from scipy's distances (negated, cosine as 1 - distance)."""
    a64, b64 = np.atleast_2d(a).astype(np.float64), np.atleast_2d(b).astype(np.float64)
    if fn == "cosine":
        return 1.0 - cdist(a64, b64, "cosine")
    if fn == "dot":
        return a64 @ b64.T
    if fn == "euclidean":
        return -cdist(a64, b64, "euclidean")
    if fn == "manhattan":
        return -cdist(a64, b64, "cityblock")
    raise AssertionError(fn)


def scipy_pairwise(a: np.ndarray, b: np.ndarray, fn: str) -> np.ndarray:
    return np.array([scipy_matrix(x, y, fn)[0, 0] for x, y in zip(a, b, strict=True)])


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1234)
    a = rng.standard_normal((50, 64)).astype(np.float32)
    b = rng.standard_normal((30, 64)).astype(np.float32)
    b2 = rng.standard_normal((50, 64)).astype(np.float32)  # same row count as a, for pairwise
    return a, b, b2


# -- the tables ----------------------------------------------------------------------------------------
def test_function_tables_name_the_four_functions() -> None:
    assert set(MATRIX_FUNCTIONS) == set(NAMES)
    assert set(PAIRWISE_FUNCTIONS) == set(NAMES)
    for name in NAMES:
        assert MATRIX_FUNCTIONS[name] is MATRIX[name]
        assert PAIRWISE_FUNCTIONS[name] is PAIRWISE[name]


def test_sentence_transformers_util_has_the_reference_functions() -> None:
    for name in ("cos_sim", "dot_score", "euclidean_sim", "manhattan_sim"):
        assert callable(getattr(util, name))
        assert callable(getattr(util, f"pairwise_{name}"))


# -- parity ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", NAMES)
def test_matrix_matches_sentence_transformers(data: tuple[np.ndarray, ...], fn: str) -> None:
    a, b, _ = data
    expected = ST_MATRIX[fn](torch.from_numpy(a), torch.from_numpy(b)).numpy()
    got = similarity(a, b, fn)
    assert got.shape == expected.shape == (50, 30)
    np.testing.assert_allclose(got, expected, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(MATRIX[fn](a, b), expected, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("fn", NAMES)
def test_pairwise_matches_sentence_transformers(data: tuple[np.ndarray, ...], fn: str) -> None:
    a, _, b2 = data
    expected = ST_PAIRWISE[fn](torch.from_numpy(a), torch.from_numpy(b2)).numpy()
    got = pairwise_similarity(a, b2, fn)
    assert got.shape == expected.shape == (50,)
    np.testing.assert_allclose(got, expected, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(PAIRWISE[fn](a, b2), expected, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("fn", NAMES)
def test_matrix_matches_scipy(data: tuple[np.ndarray, ...], fn: str) -> None:
    a, b, _ = data
    np.testing.assert_allclose(similarity(a, b, fn), scipy_matrix(a, b, fn), rtol=TOL, atol=TOL)


@pytest.mark.parametrize("fn", NAMES)
def test_pairwise_matches_scipy(data: tuple[np.ndarray, ...], fn: str) -> None:
    a, _, b2 = data
    np.testing.assert_allclose(pairwise_similarity(a, b2, fn), scipy_pairwise(a, b2, fn), rtol=TOL, atol=TOL)


@pytest.mark.parametrize("fn", NAMES)
def test_pairwise_is_the_diagonal_of_the_matrix(data: tuple[np.ndarray, ...], fn: str) -> None:
    a, _, b2 = data
    np.testing.assert_allclose(
        pairwise_similarity(a, b2, fn), np.diag(similarity(a, b2, fn)), rtol=TOL, atol=TOL
    )


@pytest.mark.parametrize("fn", NAMES)
def test_float64_keeps_float64_precision(data: tuple[np.ndarray, ...], fn: str) -> None:
    a, b, b2 = (x.astype(np.float64) for x in data)
    got = similarity(a, b, fn)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, scipy_matrix(a, b, fn), rtol=1e-10, atol=1e-10)
    pair = pairwise_similarity(a, b2, fn)
    assert pair.dtype == np.float64
    np.testing.assert_allclose(pair, scipy_pairwise(a, b2, fn), rtol=1e-10, atol=1e-10)


def test_default_function_is_cosine(data: tuple[np.ndarray, ...]) -> None:
    a, b, b2 = data
    np.testing.assert_array_equal(similarity(a, b), cos_sim(a, b))
    np.testing.assert_array_equal(pairwise_similarity(a, b2), pairwise_cos_sim(a, b2))


def test_cosine_of_a_zero_vector_is_zero_as_in_sentence_transformers(data: tuple[np.ndarray, ...]) -> None:
    a, b, _ = data
    zero = np.zeros((1, 64), dtype=np.float32)
    got = similarity(zero, b, "cosine")
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got, np.zeros((1, 30), dtype=np.float32))
    np.testing.assert_allclose(got, util.cos_sim(torch.from_numpy(zero), torch.from_numpy(b)).numpy())
    assert pairwise_similarity(zero, a[:1], "cosine")[0] == 0.0


# -- input and output kinds --------------------------------------------------------------------------
@pytest.mark.parametrize("fn", NAMES)
def test_numpy_in_numpy_out(data: tuple[np.ndarray, ...], fn: str) -> None:
    a, b, b2 = data
    matrix = similarity(a, b, fn)
    pair = pairwise_similarity(a, b2, fn)
    for out, shape in ((matrix, (50, 30)), (pair, (50,))):
        assert isinstance(out, np.ndarray)
        assert out.dtype == np.float32
        assert out.shape == shape


@pytest.mark.parametrize("fn", NAMES)
def test_torch_in_torch_out(data: tuple[np.ndarray, ...], fn: str) -> None:
    a, b, b2 = (torch.from_numpy(x) for x in data)
    matrix = similarity(a, b, fn)
    pair = pairwise_similarity(a, b2, fn)
    for out, shape in ((matrix, (50, 30)), (pair, (50,))):
        assert isinstance(out, torch.Tensor)
        assert out.dtype == torch.float32
        assert tuple(out.shape) == shape
    np.testing.assert_allclose(matrix.numpy(), similarity(data[0], data[1], fn), rtol=TOL, atol=TOL)
    np.testing.assert_allclose(pair.numpy(), pairwise_similarity(data[0], data[2], fn), rtol=TOL, atol=TOL)


def test_torch_results_keep_the_autograd_graph(data: tuple[np.ndarray, ...]) -> None:
    a = torch.from_numpy(data[0]).clone().requires_grad_(True)
    b = torch.from_numpy(data[1])
    similarity(a, b, "cosine").sum().backward()
    assert a.grad is not None
    assert a.grad.shape == a.shape


@pytest.mark.parametrize("fn", NAMES)
def test_one_dimensional_input_is_one_row(data: tuple[np.ndarray, ...], fn: str) -> None:
    a, b, _ = data
    row = similarity(a[0], b, fn)
    assert row.shape == (1, 30)
    np.testing.assert_allclose(row, similarity(a[:1], b, fn), rtol=TOL, atol=TOL)
    column = similarity(a, b[0], fn)
    assert column.shape == (50, 1)
    np.testing.assert_allclose(column, similarity(a, b[:1], fn), rtol=TOL, atol=TOL)
    assert similarity(a[0], b[0], fn).shape == (1, 1)
    pair = pairwise_similarity(a[0], b[0], fn)
    assert pair.shape == (1,)
    np.testing.assert_allclose(pair, scipy_pairwise(a[:1], b[:1], fn), rtol=TOL, atol=TOL)
    tensor_row = similarity(torch.from_numpy(a[0]), torch.from_numpy(b), fn)
    assert isinstance(tensor_row, torch.Tensor)
    assert tuple(tensor_row.shape) == (1, 30)


@pytest.mark.parametrize("fn", NAMES)
def test_integer_arrays_work(fn: str) -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(-5, 6, size=(6, 8)).astype(np.int64)
    b = rng.integers(-5, 6, size=(4, 8)).astype(np.int32)
    a[0, 0] = 1  # no all-zero rows
    got = similarity(a, b, fn)
    assert isinstance(got, np.ndarray)
    assert got.dtype.kind == "f"
    np.testing.assert_allclose(got, scipy_matrix(a, b, fn), rtol=TOL, atol=TOL)
    got_t = similarity(torch.from_numpy(a), torch.from_numpy(b), fn)
    assert isinstance(got_t, torch.Tensor)
    assert got_t.is_floating_point()
    np.testing.assert_allclose(got_t.numpy(), scipy_matrix(a, b, fn), rtol=TOL, atol=TOL)
    pair = pairwise_similarity(a[:4], b, fn)
    np.testing.assert_allclose(pair, scipy_pairwise(a[:4], b, fn), rtol=TOL, atol=TOL)


def test_lists_of_floats_give_numpy() -> None:
    got = similarity([[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]], "dot")
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, [[1.0], [1.0]])


# -- sign convention ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", NAMES)
def test_larger_means_more_similar(fn: str) -> None:
    query = np.array([[1.0, 0.0, 0.0]], dtype=np.float32)
    # near, orthogonal, opposite-ish: unit length (but the first), and no ties under any function
    candidates = np.array([[0.9, 0.1, 0.0], [0.0, 1.0, 0.0], [-0.8, -0.6, 0.0]], dtype=np.float32)
    scores = similarity(query, candidates, fn)[0]
    assert scores[0] > scores[1] > scores[2]
    pair = pairwise_similarity(np.repeat(query, 3, axis=0), candidates, fn)
    assert pair[0] > pair[1] > pair[2]


@pytest.mark.parametrize("fn", ["euclidean", "manhattan"])
def test_distances_are_negated(data: tuple[np.ndarray, ...], fn: str) -> None:
    a, b, _ = data
    got = similarity(a, b, fn)
    assert (got < 0).all()
    metric = "euclidean" if fn == "euclidean" else "cityblock"
    np.testing.assert_allclose(-got, cdist(a, b, metric), rtol=TOL, atol=TOL)
    self_sim = similarity(a, a, fn)
    # torch.cdist (here as in sentence-transformers) computes euclidean distances between more than 25 rows
    # through a matrix product, which loses precision near 0 (about sqrt(eps) * |x|): a row's distance to
    # itself comes out as a few 1e-3 instead of 0, hence the loose tolerance
    np.testing.assert_allclose(np.diag(self_sim), 0.0, atol=1e-2)
    assert (self_sim.max(axis=1) == np.diag(self_sim)).all()  # each row is most similar to itself
    np.testing.assert_array_equal(pairwise_similarity(a, a, fn), np.zeros(50, dtype=np.float32))


def test_cosine_of_a_row_with_itself_is_one(data: tuple[np.ndarray, ...]) -> None:
    a = data[0]
    np.testing.assert_allclose(np.diag(similarity(a, a, "cosine")), 1.0, atol=TOL)
    np.testing.assert_allclose(pairwise_similarity(a, a, "cosine"), 1.0, atol=TOL)


# -- errors ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", NAMES)
def test_mismatched_dimensions_raise(fn: str) -> None:
    a = np.ones((3, 64), dtype=np.float32)
    b = np.ones((3, 32), dtype=np.float32)
    with pytest.raises(ValueError, match="embedding sizes differ: 64 vs 32"):
        similarity(a, b, fn)
    with pytest.raises(ValueError, match="embedding sizes differ: 64 vs 32"):
        pairwise_similarity(a, b, fn)
    with pytest.raises(ValueError, match="embedding sizes differ: 64 vs 32"):
        MATRIX[fn](torch.from_numpy(a), torch.from_numpy(b))


@pytest.mark.parametrize("fn", NAMES)
def test_pairwise_with_different_row_counts_raises(fn: str) -> None:
    a = np.ones((5, 8), dtype=np.float32)
    b = np.ones((4, 8), dtype=np.float32)
    with pytest.raises(ValueError, match="equally many rows: 5 vs 4"):
        pairwise_similarity(a, b, fn)
    with pytest.raises(ValueError, match="equally many rows: 5 vs 4"):
        PAIRWISE[fn](torch.from_numpy(a), torch.from_numpy(b))
    assert similarity(a, b, fn).shape == (5, 4)  # the matrix form is fine with it


def test_unknown_function_name_raises_naming_it() -> None:
    a = np.ones((2, 4), dtype=np.float32)
    with pytest.raises(ValueError, match=r"unknown similarity function 'cosinus'.*cosine, dot, euclidean"):
        similarity(a, a, "cosinus")
    with pytest.raises(ValueError, match=r"unknown similarity function 'l2'"):
        pairwise_similarity(a, a, "l2")
    with pytest.raises(ValueError, match=r"'Cosine'"):  # names are case-sensitive
        similarity(a, a, "Cosine")


@pytest.mark.parametrize("bad", [np.ones((2, 3, 4), dtype=np.float32), np.float32(1.0)])
def test_arrays_that_are_not_one_or_two_dimensional_raise(bad: Any) -> None:
    good = np.ones((2, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        similarity(np.asarray(bad), good)


def test_non_array_input_raises_type_error() -> None:
    with pytest.raises(TypeError, match="numpy array or torch tensor, got str"):
        similarity("not embeddings", np.ones((1, 4), dtype=np.float32))


def test_reversed_numpy_view_works(data: tuple[np.ndarray, ...]) -> None:
    a, b, _ = data
    reversed_view = a[::-1]
    np.testing.assert_allclose(similarity(reversed_view, b), similarity(a, b)[::-1], rtol=TOL, atol=TOL)


# -- SentenceEncoder.similarity ----------------------------------------------------------------------
def test_encoder_similarity_uses_its_similarity_function(
    encoder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert encoder.similarity_fn_name == "cosine"
    sentences = ["The cat sits on the mat.", "A cat is sitting on a mat.", "고양이가 매트 위에 앉아 있다."]
    emb = encoder.encode(sentences)
    other = encoder.encode(["Stock prices fell sharply.", "The weather is nice today.", "주가가 급락했다."])

    np.testing.assert_allclose(encoder.similarity(emb, other), cos_sim(emb, other), rtol=TOL, atol=TOL)
    np.testing.assert_allclose(
        encoder.similarity_pairwise(emb, other), pairwise_cos_sim(emb, other), rtol=TOL, atol=TOL
    )
    for name in NAMES:
        monkeypatch.setattr(encoder, "similarity_fn_name", name)
        np.testing.assert_allclose(
            encoder.similarity(emb, other), MATRIX[name](emb, other), rtol=TOL, atol=TOL
        )
        np.testing.assert_allclose(
            encoder.similarity_pairwise(emb, other), PAIRWISE[name](emb, other), rtol=TOL, atol=TOL
        )
    # the functions differ on these (unit-length) embeddings, so the name really picks the function
    assert not np.allclose(cos_sim(emb, other), euclidean_sim(emb, other))


def test_encoder_similarity_ranks_paraphrases_first(encoder: Any) -> None:
    emb = encoder.encode(
        ["A man is playing a guitar.", "A person plays the guitar.", "The stock market crashed."]
    )
    scores = encoder.similarity(emb[:1], emb[1:])
    assert scores.shape == (1, 2)
    assert scores[0, 0] > scores[0, 1]
