"""Exact (brute-force) semantic search: score every corpus vector, keep the top k per query.

Queries and corpus are both processed in chunks, so memory stays at
query_chunk_size x corpus_chunk_size scores whatever the corpus size N. Each chunk keeps its own
top k by partial selection (O(chunk), no full sort), and the running best is merged chunk by chunk.
Ties are broken by the lower corpus row, also at the k-th place, so results are deterministic and
equal a full stable sort of all N scores.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Hit:
    """One search result: the corpus row and its score (larger is more similar)."""

    corpus_id: int
    score: float


def _chunk_top_k(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row, the k best (score, column) pairs, best first, lower column first among equal scores.

    topk alone may pick any of several equal scores at the k-th place; here everything strictly
    above the k-th value is kept, then the lowest columns among those equal to it.
    """
    import torch

    kth = torch.topk(scores, k, dim=1).values[:, -1:]
    above = scores > kth
    equal = scores == kth
    need = k - above.sum(dim=1, keepdim=True)
    chosen = above | (equal & (torch.cumsum(equal, dim=1) <= need))
    columns = torch.nonzero(chosen)[:, 1].reshape(scores.shape[0], k)
    values = torch.gather(scores, 1, columns)
    order = torch.sort(-values, dim=1, stable=True).indices
    return torch.gather(values, 1, order), torch.gather(columns, 1, order)


def _numpy_chunk_top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """`_chunk_top_k` for numpy scores: argpartition (O(n)), then the exact tie rule only for the
    rows where the k-th value also occurs outside the chosen k."""
    n = scores.shape[1]
    if k < n:
        columns = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    else:
        columns = np.broadcast_to(np.arange(n), scores.shape).copy()
    values = np.take_along_axis(scores, columns, axis=1)
    kth = values.min(axis=1, keepdims=True)
    ambiguous = np.flatnonzero((scores == kth).sum(axis=1) > (values == kth).sum(axis=1))
    for row in ambiguous:
        above = np.flatnonzero(scores[row] > kth[row])
        equal = np.flatnonzero(scores[row] == kth[row])[: k - len(above)]
        columns[row] = np.concatenate([above, equal])
        values[row] = scores[row, columns[row]]
    # Best first; among equal scores the lower column first.
    by_column = np.argsort(columns, axis=1, kind="stable")
    columns = np.take_along_axis(columns, by_column, axis=1)
    values = np.take_along_axis(values, by_column, axis=1)
    order = np.argsort(-values, axis=1, kind="stable")
    return np.take_along_axis(values, order, axis=1), np.take_along_axis(columns, order, axis=1)


def _is_tensor(x: Any) -> bool:
    """Whether `x` is a torch tensor, without importing torch (no tensor exists until it is)."""
    torch_module = sys.modules.get("torch")
    return torch_module is not None and isinstance(x, torch_module.Tensor)


def _as_numpy_rows(x: Any) -> np.ndarray | None:
    """A float32 numpy view of CPU inputs (None for accelerator tensors, which stay in torch)."""
    if _is_tensor(x):
        if x.device.type != "cpu":
            return None
        x = x.detach().numpy()
    array = np.asarray(x, dtype=np.float32)
    return array.reshape(1, -1) if array.ndim == 1 else array


def _plain_rows(x: Any) -> np.ndarray | None:
    """Float numpy input as float32 rows, checked as `as_tensor` checks it; None for anything else
    (tensors, lists), which goes through torch. Keeps a numpy-only search from importing torch."""
    if not isinstance(x, np.ndarray) or x.dtype.kind != "f":
        return None
    if x.ndim not in (1, 2):
        raise ValueError(f"expected a 1-D or 2-D array of embeddings, got shape {x.shape}")
    array = np.asarray(x, dtype=np.float32)
    return array.reshape(1, -1) if array.ndim == 1 else array


def _normalized(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)


def merge_hits(parts: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best `k` of several (labels, scores) hit sets of the same queries, per row: best first,
    equal scores lower label first, padding (-1, -inf) last."""
    labels = np.concatenate([p[0] for p in parts], axis=1)
    scores = np.concatenate([p[1] for p in parts], axis=1)
    if not len(labels):
        return labels[:, :k], scores[:, :k]
    order = np.stack([np.lexsort((labels[i], -scores[i]))[:k] for i in range(len(labels))])
    return np.take_along_axis(labels, order, 1), np.take_along_axis(scores, order, 1)


def _merge(best: tuple[Any, Any] | None, new: tuple[Any, Any], k: int, lib: Any) -> tuple[Any, Any]:
    """Merge two (values, columns) top-k sets; `best` holds lower columns, so a stable sort on
    -value keeps equal scores in column order."""
    if best is None:
        return new
    if lib is np:
        values = np.concatenate([best[0], new[0]], 1)
        columns = np.concatenate([best[1], new[1]], 1)
        order = np.argsort(-values, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(values, order, 1), np.take_along_axis(columns, order, 1)
    import torch

    values_t = torch.cat([best[0], new[0]], 1)
    columns_t = torch.cat([best[1], new[1]], 1)
    order_t = torch.sort(-values_t, dim=1, stable=True).indices[:, :k]
    return torch.gather(values_t, 1, order_t), torch.gather(columns_t, 1, order_t)


def _top_k_sparse(
    queries: Any, corpus: Any, top_k: int, score_function: str, query_chunk_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """`top_k_exact` for scipy sparse rows (term vectors): cosine or dot, a chunk of queries at a time
    scored against the whole corpus as one sparse product."""
    from ...similarity import similarity

    if score_function not in ("cosine", "dot"):
        raise ValueError(f"sparse vectors are ranked by cosine or dot, not {score_function!r}")
    queries, corpus = sp.csr_matrix(queries), sp.csr_matrix(corpus)
    if queries.shape[1] != corpus.shape[1]:
        raise ValueError(f"embedding sizes differ: queries {queries.shape[1]}, corpus {corpus.shape[1]}")
    k = min(top_k, corpus.shape[0])
    rows = np.zeros((queries.shape[0], k), dtype=np.int64)
    scores = np.zeros((queries.shape[0], k), dtype=np.float32)
    if k == 0:
        return rows, scores
    for start in range(0, queries.shape[0], query_chunk_size):
        chunk = np.asarray(similarity(queries[start : start + query_chunk_size], corpus, score_function))
        values, columns = _numpy_chunk_top_k(chunk.astype(np.float32, copy=False), k)
        scores[start : start + len(chunk)], rows[start : start + len(chunk)] = values, columns
    return rows, scores


def top_k_exact(
    query_embeddings: Any,
    corpus_embeddings: Any,
    top_k: int = 10,
    score_function: str = "cosine",
    corpus_chunk_size: int = 100_000,
    query_chunk_size: int = 1_000,
) -> tuple[np.ndarray, np.ndarray]:
    """The `top_k` corpus rows per query as arrays: (rows int64 (q, k), scores float32 (q, k)).

    k is min(top_k, N). Rows are best first; equal scores keep the lower row first. Cosine and dot
    on CPU run in numpy (BLAS matmul + argpartition); other functions and accelerator tensors in torch.
    """
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, not {top_k}")
    for name, size in (("corpus_chunk_size", corpus_chunk_size), ("query_chunk_size", query_chunk_size)):
        if size < 1:
            raise ValueError(f"{name} must be at least 1, not {size}")
    if sp.issparse(query_embeddings) or sp.issparse(corpus_embeddings):
        return _top_k_sparse(query_embeddings, corpus_embeddings, top_k, score_function, query_chunk_size)
    plain = (_plain_rows(query_embeddings), _plain_rows(corpus_embeddings))
    if plain[0] is not None and plain[1] is not None and score_function in ("cosine", "dot"):
        queries: Any = plain[0]
        corpus: Any = plain[1]
    else:
        from ...similarity import as_tensor

        queries, _ = as_tensor(query_embeddings)
        corpus, _ = as_tensor(corpus_embeddings)
    if queries.shape[1] != corpus.shape[1]:
        raise ValueError(f"embedding sizes differ: queries {queries.shape[1]}, corpus {corpus.shape[1]}")
    n_queries, n_corpus = queries.shape[0], corpus.shape[0]
    k = min(top_k, n_corpus)
    rows = np.zeros((n_queries, k), dtype=np.int64)
    scores = np.zeros((n_queries, k), dtype=np.float32)
    if k == 0:
        return rows, scores
    np_queries, np_corpus = _as_numpy_rows(queries), _as_numpy_rows(corpus)
    use_numpy = score_function in ("cosine", "dot") and np_queries is not None and np_corpus is not None
    for q_start in range(0, n_queries, query_chunk_size):
        q_end = min(q_start + query_chunk_size, n_queries)
        best: tuple[Any, Any] | None = None
        for c_start in range(0, n_corpus, corpus_chunk_size):
            c_end = min(c_start + corpus_chunk_size, n_corpus)
            chunk_k = min(k, c_end - c_start)
            if use_numpy:
                assert np_queries is not None and np_corpus is not None
                q, c = np_queries[q_start:q_end], np_corpus[c_start:c_end]
                if score_function == "cosine":
                    # Dividing the scores by the corpus norms avoids writing a normalized corpus copy.
                    norms = np.sqrt(np.einsum("ij,ij->i", c, c))
                    chunk_scores_np = (_normalized(q) @ c.T) / np.where(norms == 0, 1, norms)
                else:
                    chunk_scores_np = q @ c.T
                values, columns = _numpy_chunk_top_k(chunk_scores_np.astype(np.float32, copy=False), chunk_k)
                best = _merge(best, (values, columns + c_start), k, np)
            else:
                from ...similarity import similarity

                chunk_scores = similarity(
                    queries[q_start:q_end], corpus[c_start:c_end], score_function
                ).float()
                values_t, columns_t = _chunk_top_k(chunk_scores, chunk_k)
                best = _merge(best, (values_t, columns_t + c_start), k, sys.modules["torch"])
        assert best is not None
        found_scores, found_rows = best
        if _is_tensor(found_scores):
            found_scores, found_rows = found_scores.cpu().numpy(), found_rows.cpu().numpy()
        scores[q_start:q_end] = found_scores
        rows[q_start:q_end] = found_rows
    return rows, scores


def semantic_search(
    query_embeddings: Any,
    corpus_embeddings: Any,
    top_k: int = 10,
    score_function: str = "cosine",
    corpus_chunk_size: int = 100_000,
    query_chunk_size: int = 1_000,
) -> list[list[Hit]]:
    """For each query, the `top_k` corpus rows by `score_function`, best first.

    Ties keep the lower corpus id first, so results are deterministic.
    """
    rows, scores = top_k_exact(
        query_embeddings, corpus_embeddings, top_k, score_function, corpus_chunk_size, query_chunk_size
    )
    return [
        [Hit(int(i), float(s)) for i, s in zip(row, score, strict=True)]
        for row, score in zip(rows.tolist(), scores.tolist(), strict=True)
    ]


class ExactIndex:
    """Brute-force index over labelled vectors, with the add/remove/search contract of `HNSWIndex`.

    Rows are kept in ascending label order (labels only grow in a collection), so equal scores
    return the lower label first. Vectors live in a growable buffer (amortised O(1) append);
    `remove` compacts in one O(N) pass per call, so callers remove in batches.
    """

    METRICS = ("cosine", "dot")

    def __init__(self, dim: int, metric: str = "cosine") -> None:
        if dim < 1:
            raise ValueError(f"dim must be at least 1, not {dim}")
        if metric not in self.METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(self.METRICS)}")
        self.dim = dim
        self.metric = metric
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self._labels = np.zeros(0, dtype=np.int64)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __contains__(self, label: object) -> bool:
        if not isinstance(label, (int, np.integer)):
            return False
        pos = np.searchsorted(self.ids(), label)
        return bool(pos < self._size and self._labels[pos] == label)

    def ids(self) -> np.ndarray:
        return self._labels[: self._size]

    def vectors(self) -> np.ndarray:
        """The stored vectors (normalized under cosine), in label order; a view, do not modify."""
        return self._vectors[: self._size]

    def memory_bytes(self) -> int:
        return int(self._vectors.nbytes + self._labels.nbytes)

    def get_config_dict(self) -> dict[str, Any]:
        return {"kind": "exact", "dim": self.dim, "metric": self.metric}

    def add(self, ids: Any, vectors: Any) -> None:
        """Append labelled vectors; a label already present is replaced."""
        labels = np.asarray(ids, dtype=np.int64).reshape(-1)
        data = np.asarray(vectors, dtype=np.float32)
        if data.ndim == 1:
            data = data.reshape(1, -1)
        if data.ndim != 2 or data.shape[1] != self.dim:
            raise ValueError(f"expected vectors of shape (n, {self.dim}), got {data.shape}")
        if data.shape[0] != labels.shape[0]:
            raise ValueError(f"{labels.shape[0]} ids for {data.shape[0]} vectors")
        if len(np.unique(labels)) != len(labels):
            raise ValueError("ids repeat within one add")
        if (labels < 0).any():
            raise ValueError("ids must be non-negative")
        if labels.size == 0:
            return
        if not np.isfinite(data).all():
            raise ValueError("vectors contain NaN or infinite values")
        if self.metric == "cosine":
            data = _normalized(data)
        present = np.isin(labels, self.ids())
        if present.any():
            self.remove(labels[present])
        order = np.argsort(labels, kind="stable")
        labels, data = labels[order], data[order]
        if self._size and labels[0] < self._labels[self._size - 1]:
            merged_labels = np.concatenate([self.ids(), labels])
            merged = np.concatenate([self.vectors(), data])
            keep = np.argsort(merged_labels, kind="stable")
            self._labels, self._vectors, self._size = merged_labels[keep], merged[keep], len(keep)
            return
        needed = self._size + len(labels)
        if needed > len(self._labels):
            capacity = max(needed, 2 * len(self._labels), 1024)
            grown = np.zeros((capacity, self.dim), dtype=np.float32)
            grown[: self._size] = self.vectors()
            grown_labels = np.zeros(capacity, dtype=np.int64)
            grown_labels[: self._size] = self.ids()
            self._vectors, self._labels = grown, grown_labels
        self._vectors[self._size : needed] = data
        self._labels[self._size : needed] = labels
        self._size = needed

    def remove(self, ids: Any) -> int:
        """Remove labels (absent ones are ignored); returns how many were removed."""
        labels = np.asarray(ids, dtype=np.int64).reshape(-1)
        keep = ~np.isin(self.ids(), labels)
        removed = int(self._size - keep.sum())
        if removed:
            self._vectors = self.vectors()[keep].copy()
            self._labels = self.ids()[keep].copy()
            self._size = len(self._labels)
        return removed

    def search(
        self, queries: Any, k: int, allowed: np.ndarray | None = None, corpus_chunk_size: int = 100_000
    ) -> tuple[np.ndarray, np.ndarray]:
        """(labels (q, k) int64 padded with -1, scores (q, k) float32), best first.

        `allowed` (labels) restricts the search to those vectors, for metadata filters.
        """
        query = np.asarray(queries, dtype=np.float32)
        if query.ndim == 1:
            query = query.reshape(1, -1)
        if query.ndim != 2 or query.shape[1] != self.dim:
            raise ValueError(f"expected queries of shape (q, {self.dim}), got {query.shape}")
        labels, vectors = self.ids(), self.vectors()
        if allowed is not None:
            keep = np.flatnonzero(np.isin(labels, np.asarray(allowed, dtype=np.int64)))
            labels, vectors = labels[keep], vectors[keep]
        out_labels = np.full((query.shape[0], k), -1, dtype=np.int64)
        out_scores = np.full((query.shape[0], k), -np.inf, dtype=np.float32)
        if len(labels) == 0:
            return out_labels, out_scores
        if self.metric == "cosine":
            query = _normalized(query)
        # Stored vectors are already normalized under cosine, so a dot product is the cosine.
        rows, scores = top_k_exact(query, vectors, k, "dot", corpus_chunk_size=corpus_chunk_size)
        found = rows.shape[1]
        out_labels[:, :found] = labels[rows]
        out_scores[:, :found] = scores
        return out_labels, out_scores
