"""Exact search over a saved matrix, memory-mapped, plus what was added since in memory.

A reader opens a collection's saved exact index (`array_file.py`: labels ascending, vectors as
`ExactIndex` holds them, normalized under cosine) without reading it: pages are read by the first
search. Labels added after the save go to an in-memory `ExactIndex` (the tail: their labels are all
above the saved ones in a collection, whose labels only grow); labels removed from the saved part
are masked, not rewritten. Results equal
an `ExactIndex` holding the same vectors: the same dot products, equal scores lower label first.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .array_file import ArrayFileError, read_arrays, write_arrays
from .exact import ExactIndex, _normalized, merge_hits, top_k_exact


class MappedExactIndex:
    """The add / remove / search / ids contract of `ExactIndex`, over a mapped base and a tail."""

    def __init__(self, dim: int, metric: str, labels: np.ndarray, vectors: np.ndarray) -> None:
        self.dim, self.metric = dim, metric
        self._base_labels, self._base = labels, vectors
        self._dead = np.zeros(len(labels), dtype=bool)
        self._n_dead = 0
        # What was added since the save: in memory, or a saved tail mapped in turn (followers/dense_tail.py).
        self.tail: ExactIndex | MappedExactIndex = ExactIndex(dim, metric)

    @classmethod
    def load(
        cls, path: Path, dim: int, metric: str, expect: Mapping[str, Any] | None = None
    ) -> MappedExactIndex:
        """The saved index at `path`, verified (`read_arrays`: checksums, and `expect`'s values in its
        meta); ArrayFileError or ValueError when it is not a whole exact index of these vectors."""
        meta, arrays = read_arrays(path, expect)
        labels, vectors = arrays["labels"], arrays["vectors"]
        if (
            meta.get("dim") != dim
            or meta.get("metric") != metric
            or vectors.shape != (len(labels), dim)
            or labels.dtype != np.int64
            or vectors.dtype != np.float32
            or (len(labels) > 1 and labels[0] >= labels[-1])
        ):
            raise ArrayFileError(f"{path}: not an exact index of {dim}-d {metric} vectors")
        return cls(dim, metric, labels, vectors)

    @staticmethod
    def save(index: Any, path: Path, meta: Mapping[str, Any] | None = None) -> None:
        """Write an exact index's labels and vectors (an `ExactIndex` or a mapped one) to `path`;
        `meta` (JSON: whose index it is, the watermark it covers) is kept for `load(expect=...)`."""
        meta = {**(meta or {}), "kind": "exact", "dim": index.dim, "metric": index.metric}
        write_arrays(path, {"labels": index.ids(), "vectors": index.vectors()}, meta)

    def __len__(self) -> int:
        return len(self._base_labels) - self._n_dead + len(self.tail)

    def __contains__(self, label: object) -> bool:
        if not isinstance(label, (int, np.integer)):
            return False
        pos = self._positions(np.asarray([label], dtype=np.int64))
        return bool(len(pos)) or label in self.tail

    def _positions(self, labels: np.ndarray) -> np.ndarray:
        """Rows of the live base vectors with these labels."""
        pos = np.searchsorted(self._base_labels, labels)
        found = pos < len(self._base_labels)
        pos = pos[found][self._base_labels[pos[found]] == labels[found]]
        return pos[~self._dead[pos]]

    def ids(self) -> np.ndarray:
        """The labels held, ascending."""
        return self._merged()[0]

    def vectors(self) -> np.ndarray:
        """The vectors held (normalized under cosine), in label order."""
        return self._merged()[1]

    def _merged(self) -> tuple[np.ndarray, np.ndarray]:
        live = ~self._dead
        labels = np.concatenate([self._base_labels[live], self.tail.ids()])
        vectors = np.concatenate([self._base[live], self.tail.vectors()])
        if len(labels) > 1 and np.any(labels[1:] < labels[:-1]):  # a saved label replaced: rare
            order = np.argsort(labels, kind="stable")
            labels, vectors = labels[order], vectors[order]
        return labels, vectors

    def memory_bytes(self) -> int:
        return int(self._base.nbytes + self._base_labels.nbytes + self.tail.memory_bytes())

    def add(self, ids: Any, vectors: Any) -> None:
        """Append labelled vectors; a label already present (in either part) is replaced."""
        labels = np.asarray(ids, dtype=np.int64).reshape(-1)
        self._kill(labels)
        self.tail.add(labels, vectors)

    def remove(self, ids: Any) -> int:
        labels = np.asarray(ids, dtype=np.int64).reshape(-1)
        return self._kill(labels) + self.tail.remove(labels)

    def _kill(self, labels: np.ndarray) -> int:
        pos = np.unique(self._positions(labels))
        self._dead[pos] = True
        self._n_dead += len(pos)
        return len(pos)

    def search(
        self, queries: Any, k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(labels (q, k) int64 padded with -1, scores (q, k) float32), best first, among
        `allowed` labels when given."""
        query = np.asarray(queries, dtype=np.float32)
        query = query.reshape(1, -1) if query.ndim == 1 else query
        if query.ndim != 2 or query.shape[1] != self.dim:
            raise ValueError(f"expected queries of shape (q, {self.dim}), got {query.shape}")
        tail_labels, tail_scores = self.tail.search(query, k, allowed=allowed)
        normalized = _normalized(query) if self.metric == "cosine" else query
        if allowed is None:
            labels, vectors, fetch = self._base_labels, self._base, k + self._n_dead
        else:
            rows = self._positions(np.unique(np.asarray(allowed, dtype=np.int64)))
            labels, vectors, fetch = self._base_labels[rows], self._base[rows], k
        base_labels = np.full((len(query), k), -1, dtype=np.int64)
        base_scores = np.full((len(query), k), -np.inf, dtype=np.float32)
        if len(labels):
            with warnings.catch_warnings():  # torch warns that a mapped array is read-only; it only reads
                warnings.simplefilter("ignore", UserWarning)
                rows_found, scores = top_k_exact(normalized, vectors, min(fetch, len(labels)), "dot")
            dead = self._dead[rows_found] if allowed is None else np.zeros(rows_found.shape, bool)
            for i in range(len(query)):
                keep = np.flatnonzero(~dead[i])[:k]
                base_labels[i, : len(keep)] = labels[rows_found[i, keep]]
                base_scores[i, : len(keep)] = scores[i, keep]
        # Best first, equal scores lower label first (padding, -inf, last).
        return merge_hits([(base_labels, base_scores), (tail_labels, tail_scores)], k)
