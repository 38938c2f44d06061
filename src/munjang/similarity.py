"""Similarity between embeddings: cosine, dot, euclidean, manhattan.

Every function takes numpy arrays or torch tensors and returns the same kind it was given;
`similarity` and `pairwise_similarity` also take scipy sparse rows (term vectors) and return numpy.
Distances are returned negated (-||a-b||), so that for every function larger means more similar,
as in sentence-transformers.

- matrix (`similarity`):          S[i, j] = f(a_i, b_j)   shape (len(a), len(b))
- pairwise (`pairwise_similarity`): s[i] = f(a_i, b_i)     shape (len(a),)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp
import torch

ArrayT = TypeVar("ArrayT", np.ndarray, torch.Tensor)


def as_tensor(x: Any) -> tuple[torch.Tensor, bool]:
    """(tensor, was_numpy). 1-D input is treated as one row."""
    if isinstance(x, torch.Tensor):
        t, was_numpy = x, False
    elif isinstance(x, np.ndarray):
        if x.ndim not in (1, 2):
            raise ValueError(f"expected a 1-D or 2-D array of embeddings, got shape {x.shape}")
        # Views with negative strides or foreign byte order need a native contiguous copy for torch.
        t, was_numpy = torch.from_numpy(np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("="))), True
    elif isinstance(x, (list, tuple)):
        t, was_numpy = torch.as_tensor(np.asarray(x, dtype=np.float32)), True
    else:
        raise TypeError(f"expected a numpy array or torch tensor, got {type(x).__name__}")
    if t.dim() == 1:
        t = t.unsqueeze(0)
    if t.dim() != 2:
        raise ValueError(f"expected a 1-D or 2-D array of embeddings, got shape {tuple(t.shape)}")
    if not t.is_floating_point():
        t = t.float()
    return t, was_numpy


def _back(result: torch.Tensor, was_numpy: bool) -> Any:
    return result.cpu().numpy() if was_numpy else result


def _check_dims(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"embedding sizes differ: {a.shape[1]} vs {b.shape[1]}")
    return b.to(device=a.device, dtype=torch.promote_types(a.dtype, b.dtype))


def _normalize(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(x, p=2, dim=1)


def cos_sim(a: Any, b: Any) -> Any:
    """Cosine similarity matrix."""
    ta, numpy_in = as_tensor(a)
    tb = _check_dims(ta, as_tensor(b)[0])
    return _back(_normalize(ta.to(tb.dtype)) @ _normalize(tb).T, numpy_in)


def dot_score(a: Any, b: Any) -> Any:
    """Dot-product matrix."""
    ta, numpy_in = as_tensor(a)
    tb = _check_dims(ta, as_tensor(b)[0])
    return _back(ta.to(tb.dtype) @ tb.T, numpy_in)


def _cdist(a: torch.Tensor, b: torch.Tensor, p: float) -> torch.Tensor:
    """torch.cdist, computed in float32 for half-precision input (CPU cdist has no half kernel).

    Like sentence-transformers, euclidean distances use the matrix-product form, which is fast but
    loses precision for near-identical rows (about 1e-3 on a distance of 0).
    """
    dtype = a.dtype
    if dtype in (torch.float16, torch.bfloat16):
        return torch.cdist(a.float(), b.float(), p=p).to(dtype)
    return torch.cdist(a, b, p=p)


def euclidean_sim(a: Any, b: Any) -> Any:
    """Negative euclidean distance matrix."""
    ta, numpy_in = as_tensor(a)
    tb = _check_dims(ta, as_tensor(b)[0])
    return _back(-_cdist(ta.to(tb.dtype), tb, p=2.0), numpy_in)


def manhattan_sim(a: Any, b: Any) -> Any:
    """Negative manhattan (L1) distance matrix."""
    ta, numpy_in = as_tensor(a)
    tb = _check_dims(ta, as_tensor(b)[0])
    return _back(-_cdist(ta.to(tb.dtype), tb, p=1.0), numpy_in)


def _pairwise_inputs(a: Any, b: Any) -> tuple[torch.Tensor, torch.Tensor, bool]:
    ta, numpy_in = as_tensor(a)
    tb = _check_dims(ta, as_tensor(b)[0])
    if ta.shape[0] != tb.shape[0]:
        raise ValueError(f"pairwise similarity needs equally many rows: {ta.shape[0]} vs {tb.shape[0]}")
    return ta.to(tb.dtype), tb, numpy_in


def pairwise_cos_sim(a: Any, b: Any) -> Any:
    ta, tb, numpy_in = _pairwise_inputs(a, b)
    return _back((_normalize(ta) * _normalize(tb)).sum(dim=1), numpy_in)


def pairwise_dot_score(a: Any, b: Any) -> Any:
    ta, tb, numpy_in = _pairwise_inputs(a, b)
    return _back((ta * tb).sum(dim=1), numpy_in)


def pairwise_euclidean_sim(a: Any, b: Any) -> Any:
    ta, tb, numpy_in = _pairwise_inputs(a, b)
    return _back(-torch.linalg.vector_norm(ta - tb, ord=2, dim=1), numpy_in)


def pairwise_manhattan_sim(a: Any, b: Any) -> Any:
    ta, tb, numpy_in = _pairwise_inputs(a, b)
    return _back(-(ta - tb).abs().sum(dim=1), numpy_in)


MATRIX_FUNCTIONS: dict[str, Callable[[Any, Any], Any]] = {
    "cosine": cos_sim,
    "dot": dot_score,
    "euclidean": euclidean_sim,
    "manhattan": manhattan_sim,
}
PAIRWISE_FUNCTIONS: dict[str, Callable[[Any, Any], Any]] = {
    "cosine": pairwise_cos_sim,
    "dot": pairwise_dot_score,
    "euclidean": pairwise_euclidean_sim,
    "manhattan": pairwise_manhattan_sim,
}
# The similarity function names, in the order they are reported.
SIMILARITY_NAMES: tuple[str, ...] = tuple(MATRIX_FUNCTIONS)


def _lookup(table: dict[str, Callable[[Any, Any], Any]], name: str) -> Callable[[Any, Any], Any]:
    if name not in table:
        raise ValueError(f"unknown similarity function {name!r}; choose from {', '.join(table)}")
    return table[name]


def _sparse_rows(x: Any) -> sp.csr_matrix:
    rows = sp.csr_matrix(x, dtype=np.float64)
    return rows if rows.shape[0] else sp.csr_matrix((0, rows.shape[1]))


def _sparse_unit(x: sp.csr_matrix) -> sp.csr_matrix:
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    return sp.csr_matrix(sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ x)


def _sparse_inputs(a: Any, b: Any) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    left, right = _sparse_rows(a), _sparse_rows(b)
    if left.shape[1] != right.shape[1]:
        raise ValueError(f"embedding sizes differ: {left.shape[1]} vs {right.shape[1]}")
    return left, right


def _sparse_similarity(a: Any, b: Any, fn: str) -> np.ndarray:
    """The similarity matrix of sparse rows (cosine, dot, negated euclidean / manhattan)."""
    left, right = _sparse_inputs(a, b)
    if fn in ("cosine", "dot"):
        if fn == "cosine":
            left, right = _sparse_unit(left), _sparse_unit(right)
        return np.asarray((left @ right.T).toarray())
    from sklearn.metrics.pairwise import euclidean_distances, manhattan_distances

    distances = euclidean_distances if fn == "euclidean" else manhattan_distances
    return np.asarray(-distances(left, right))


def _sparse_pairwise(a: Any, b: Any, fn: str) -> np.ndarray:
    """Row-by-row similarity of sparse rows."""
    left, right = _sparse_inputs(a, b)
    if left.shape[0] != right.shape[0]:
        raise ValueError(f"pairwise similarity needs equally many rows: {left.shape[0]} vs {right.shape[0]}")
    if fn == "cosine":
        left, right = _sparse_unit(left), _sparse_unit(right)
    if fn in ("cosine", "dot"):
        return np.asarray(left.multiply(right).sum(1)).ravel()
    difference = left - right
    if fn == "euclidean":
        return -np.sqrt(np.asarray(difference.multiply(difference).sum(1)).ravel())
    return -np.asarray(abs(difference).sum(1)).ravel()


def similarity(a: Any, b: Any, fn: str = "cosine") -> Any:
    """Similarity matrix with the named function."""
    function = _lookup(MATRIX_FUNCTIONS, fn)
    return _sparse_similarity(a, b, fn) if sp.issparse(a) or sp.issparse(b) else function(a, b)


def pairwise_similarity(a: Any, b: Any, fn: str = "cosine") -> Any:
    """Row-by-row similarity with the named function."""
    function = _lookup(PAIRWISE_FUNCTIONS, fn)
    return _sparse_pairwise(a, b, fn) if sp.issparse(a) or sp.issparse(b) else function(a, b)
