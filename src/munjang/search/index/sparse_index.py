"""An inverted index over sparse (SPLADE) vectors, kept in step with a collection's store.

Documents are columns of a (vocabulary x documents) CSR matrix: row j is token j's posting list,
its documents and weights. A query's score for document d is the dot product

    score(q, d) = Σ_j q_j · w_jd        over the tokens j the query has

which `query (CSR) @ postings (CSR)` computes touching only the posting lists of the query's own
tokens (scipy.sparse: the index is the matrix; no extra engine to keep). Only documents sharing a
token with the query get a score.

Additions arrive in label order as new segments (each a matrix of its own); deletions mark a
column dead. Segments are merged, and dead columns dropped, when there are many or much is dead,
so a stream of small adds costs no full rebuild each time. Like the BM25 index, it lives in memory
and is rebuilt from the store (which holds every passage's sparse vector) when a collection opens;
`sync` replays the store's changes since the watermark it has applied, so a crash at any moment
costs nothing but the replay.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

# Merge segments when there are more than this many, or when this fraction of columns is dead.
MAX_SEGMENTS = 8
MAX_DEAD_FRACTION = 0.25

SparseRows = Sequence[tuple[np.ndarray, np.ndarray]]


def rows_to_csr(rows: SparseRows, dim: int) -> sp.csr_matrix:
    """(token ids, weights) per row -> a (rows x dim) CSR matrix of float32."""
    lengths = np.fromiter((len(ids) for ids, _ in rows), dtype=np.int64, count=len(rows))
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    indices = (
        np.concatenate([ids for ids, _ in rows]).astype(np.int64) if len(rows) else np.zeros(0, np.int64)
    )
    data = np.concatenate([w for _, w in rows]).astype(np.float32) if len(rows) else np.zeros(0, np.float32)
    if len(indices) and (indices.min() < 0 or indices.max() >= dim):
        raise ValueError(f"sparse vector has a token id outside the vocabulary of {dim}")
    matrix = sp.csr_matrix((data, indices, indptr), shape=(len(rows), dim))
    matrix.sum_duplicates()
    return matrix


class _Segment:
    """One batch of documents: labels (ascending), postings (dim x n, CSR) and which are alive."""

    def __init__(self, labels: np.ndarray, postings: sp.csr_matrix) -> None:
        self.labels = labels
        self.postings = postings
        self.alive = np.ones(len(labels), dtype=bool)

    def memory_bytes(self) -> int:
        p = self.postings
        return int(
            p.data.nbytes + p.indices.nbytes + p.indptr.nbytes + self.labels.nbytes + self.alive.nbytes
        )


class SparseIndex:
    """Labelled sparse vectors; `search` ranks by dot product (larger = better)."""

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)
        self.segments: list[_Segment] = []

    def __len__(self) -> int:
        return int(sum(int(s.alive.sum()) for s in self.segments))

    def ids(self) -> np.ndarray:
        parts = [s.labels[s.alive] for s in self.segments]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def memory_bytes(self) -> int:
        return sum(s.memory_bytes() for s in self.segments)

    def vector(self, label: int) -> dict[int, float]:
        """The stored vector of one live document as {token id: weight} (empty if not held)."""
        for segment in self.segments:
            at = np.searchsorted(segment.labels, label)
            if at < len(segment.labels) and segment.labels[at] == label and segment.alive[at]:
                column = segment.postings[:, [int(at)]].tocoo()
                return {int(r): float(v) for r, v in zip(column.row, column.data, strict=True)}
        return {}

    def add(self, labels: np.ndarray, rows: SparseRows) -> None:
        """Add documents (labels above every label held: the store hands them out increasing)."""
        labels = np.asarray(labels, dtype=np.int64)
        if len(labels) != len(rows):
            raise ValueError(f"{len(labels)} labels for {len(rows)} sparse vectors")
        if not len(labels):
            return
        self.segments.append(_Segment(labels, rows_to_csr(rows, self.dim).T.tocsr()))
        self._maybe_merge()

    def remove(self, labels: np.ndarray) -> int:
        """Mark documents dead; labels not held are ignored. Returns how many were removed."""
        wanted = np.asarray(labels, dtype=np.int64)
        removed = 0
        for segment in self.segments:
            hit = np.isin(segment.labels, wanted) & segment.alive
            removed += int(hit.sum())
            segment.alive[hit] = False
        self._maybe_merge()
        return removed

    def _maybe_merge(self) -> None:
        total = sum(len(s.labels) for s in self.segments)
        dead = total - len(self)
        if len(self.segments) <= MAX_SEGMENTS and dead <= MAX_DEAD_FRACTION * max(total, 1):
            return
        keep = [s for s in self.segments if s.alive.any()]
        if not keep:
            self.segments = []
            return
        labels = np.concatenate([s.labels[s.alive] for s in keep])
        postings = sp.hstack([s.postings[:, np.flatnonzero(s.alive)] for s in keep], format="csr")
        self.segments = [_Segment(labels, postings.astype(np.float32))]

    def search(
        self, queries: sp.csr_matrix, k: int, allowed: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        """Per query row, up to k (label, score) pairs, best first, among documents sharing a token
        with it (and among `allowed` labels, when given)."""
        out: list[list[tuple[int, float]]] = []
        queries = sp.csr_matrix(queries, dtype=np.float32)
        candidates: list[tuple[np.ndarray, sp.csr_matrix]] = []
        for segment in self.segments:
            usable = segment.alive if allowed is None else segment.alive & np.isin(segment.labels, allowed)
            candidates.append((usable, (queries @ segment.postings).tocsr()))
        for q in range(queries.shape[0]):
            labels_parts, score_parts = [], []
            for segment, (usable, scores) in zip(self.segments, candidates, strict=True):
                start, end = scores.indptr[q], scores.indptr[q + 1]
                columns, values = scores.indices[start:end], scores.data[start:end]
                keep = usable[columns] & (values != 0)
                labels_parts.append(segment.labels[columns[keep]])
                score_parts.append(values[keep])
            labels = np.concatenate(labels_parts) if labels_parts else np.zeros(0, np.int64)
            values = np.concatenate(score_parts) if score_parts else np.zeros(0, np.float32)
            if len(values) > k:  # the k best, and every one tied with the k-th: the cut is by label too
                kth = values[np.argpartition(-values, k - 1)[k - 1]]
                keep = values >= kth
                labels, values = labels[keep], values[keep]
            order = np.lexsort((labels, -values))[:k]  # best first; ties by label, so results are stable
            out.append([(int(labels[i]), float(values[i])) for i in order])
        return out
