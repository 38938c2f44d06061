"""A collection's multi-vector (ColBERT) index: every passage's token matrix, kept in step with the store.

The token matrices live in one growing float16 array (`FlatTokens` layout: vectors and offsets, a
label per document, an alive flag), replayed from the store's `token_vectors` cache by watermark like
the sparse index: deletions mark a document dead, new labels are appended, so a writer killed at any
moment costs nothing but the replay when the collection opens.

Search ranks by MaxSim (or MeanMaxSim, as the model scores):

- exact (brute force, float16 read as float32, chunked over documents) when at most `exact_limit`
  documents are usable (alive and allowed by a filter);
- above that, a PLAID index (`plaid.py`) built lazily over the documents held at that moment, and
  documents added since (the tail) scored exactly beside it. The PLAID part is rebuilt when the tail
  or the dead share grows past a quarter of it; dead and filtered-out documents are dropped from
  its results, which asks it for as many more as it holds unusable ones.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from ...encoders.multi_vector.flat import segment_max, token_rows
from .plaid import PlaidIndex

# Usable documents up to which search is exact; above it, PLAID.
EXACT_LIMIT = 20_000
# Rebuild the PLAID part when the tail, or the dead documents inside it, pass this share of it.
REBUILD_FRACTION = 0.25
# Query tokens x document tokens per block of exact scoring.
CHUNK_ELEMENTS = 16_000_000
# Candidates PLAID reranks exactly (more when the index holds that many dead or filtered-out documents).
PLAID_RERANK = 256


def exact_scores(
    queries: Sequence[np.ndarray], vectors: np.ndarray, offsets: np.ndarray, docs: np.ndarray
) -> np.ndarray:
    """(queries, docs) MaxSim of float32 query matrices with the chosen documents of a flat store,
    the documents' tokens read in chunks (float16 -> float32)."""
    scores = np.zeros((len(queries), len(docs)), dtype=np.float32)
    if not len(queries) or not len(docs):
        return scores
    q_all = np.concatenate([np.asarray(q, np.float32) for q in queries])
    q_starts = np.concatenate([[0], np.cumsum([len(q) for q in queries])[:-1]]).astype(np.int64)
    lengths = offsets[docs + 1] - offsets[docs]
    budget = max(1, CHUNK_ELEMENTS // max(1, len(q_all)))
    start = 0
    while start < len(docs):
        end = start + max(1, int(np.searchsorted(np.cumsum(lengths[start:]), budget, side="right")))
        rows, part_lengths = token_rows(offsets, docs[start:end])
        sims = q_all @ vectors[rows].astype(np.float32).T
        best = np.full((len(q_all), end - start), -np.inf, dtype=np.float32)
        segment_max(sims, part_lengths, best)
        best[~np.isfinite(best)] = 0.0
        scores[:, start:end] = np.add.reduceat(best, q_starts, axis=0)
        start = end
    return scores


class TokenIndex:
    """Labelled token matrices; `search` ranks by MaxSim (larger = better)."""

    def __init__(self, dim: int, exact_limit: int = EXACT_LIMIT) -> None:
        self.dim = int(dim)
        self.exact_limit = exact_limit
        self.vectors = np.zeros((0, self.dim), np.float16)
        self.offsets = np.zeros(1, np.int64)
        self.labels = np.zeros(0, np.int64)
        self.alive = np.zeros(0, bool)
        self.plaid: PlaidIndex | None = None
        self.plaid_size = 0  # the documents (rows 0..plaid_size-1) the PLAID part was built over
        self._pending: list[np.ndarray] = []  # added matrices not yet joined to `vectors`
        # One reader or writer at a time: a search may join `_pending` or build PLAID, and the
        # bge-m3 mode reads matrices beside the searches of other threads.
        self._lock = threading.RLock()

    def _flat(self) -> np.ndarray:
        """All token vectors in one array (joining what was added since the last call)."""
        if self._pending:
            self.vectors = np.concatenate([self.vectors, *self._pending])
            self._pending = []
        return self.vectors

    def __len__(self) -> int:
        return int(self.alive.sum())

    def ids(self) -> np.ndarray:
        with self._lock:
            return self.labels[self.alive]

    def memory_bytes(self) -> int:
        with self._lock:
            return self._memory_bytes()

    def _memory_bytes(self) -> int:
        held = self._flat().nbytes + self.offsets.nbytes + self.labels.nbytes + self.alive.nbytes
        return int(held + (self.plaid.memory_bytes() if self.plaid is not None else 0))

    def matrix(self, label: int) -> np.ndarray | None:
        """The stored (tokens, dim) float32 matrix of one live document, or None."""
        with self._lock:
            return self._matrix(label)

    def _matrix(self, label: int) -> np.ndarray | None:
        at = int(np.searchsorted(self.labels, label))
        if at >= len(self.labels) or self.labels[at] != label or not self.alive[at]:
            return None
        return self._flat()[self.offsets[at] : self.offsets[at + 1]].astype(np.float32)

    def add(self, labels: np.ndarray, matrices: Sequence[np.ndarray]) -> None:
        """Append documents (labels above every label held: the store hands them out increasing)."""
        with self._lock:
            self._add(labels, matrices)

    def _add(self, labels: np.ndarray, matrices: Sequence[np.ndarray]) -> None:
        if len(labels) != len(matrices):
            raise ValueError(f"{len(labels)} labels for {len(matrices)} token matrices")
        if not len(labels):
            return
        for m in matrices:
            if m.ndim != 2 or m.shape[1] != self.dim:
                raise ValueError(f"token matrix of shape {m.shape}; this index holds {self.dim}-d tokens")
        lengths = np.array([len(m) for m in matrices], dtype=np.int64)
        self._pending += [np.asarray(m, np.float16) for m in matrices]
        self.offsets = np.concatenate([self.offsets, self.offsets[-1] + np.cumsum(lengths)])
        self.labels = np.concatenate([self.labels, np.asarray(labels, np.int64)])
        self.alive = np.concatenate([self.alive, np.ones(len(labels), bool)])

    def remove(self, labels: np.ndarray) -> int:
        """Mark documents dead; labels not held are ignored. Returns how many were removed."""
        with self._lock:
            hit = np.isin(self.labels, labels) & self.alive
            self.alive[hit] = False
            return int(hit.sum())

    def search(
        self, queries: Sequence[np.ndarray], k: int, allowed: np.ndarray | None = None, mean: bool = False
    ) -> list[list[tuple[int, float]]]:
        """Per query, up to k (label, score) pairs, best first, among live (and `allowed`) documents;
        `mean` divides each query's scores by its token count (MeanMaxSim)."""
        with self._lock:
            return self._search(queries, k, allowed, mean)

    def _search(
        self, queries: Sequence[np.ndarray], k: int, allowed: np.ndarray | None, mean: bool
    ) -> list[list[tuple[int, float]]]:
        usable = self.alive if allowed is None else self.alive & np.isin(self.labels, allowed)
        rows = np.flatnonzero(usable)
        if len(rows) <= self.exact_limit:
            scores = exact_scores(queries, self._flat(), self.offsets, rows)
            found = [self._top(row, rows, k) for row in scores]
        else:
            found = self._plaid_search(queries, k, usable)
        out = []
        for q, (doc_rows, scores) in zip(queries, found, strict=True):
            scale = 1.0 / max(len(q), 1) if mean else 1.0
            out.append(
                [(int(self.labels[r]), float(s) * scale) for r, s in zip(doc_rows, scores, strict=True)]
            )
        return out

    @staticmethod
    def _top(scores: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if len(scores) > k:  # the k best, and every one tied with the k-th: the cut is by row too
            kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
            keep = scores >= kth
            scores, rows = scores[keep], rows[keep]
        order = np.lexsort((rows, -scores))[:k]  # best first; ties by insertion, so results are stable
        return rows[order], scores[order]

    def _plaid_search(
        self, queries: Sequence[np.ndarray], k: int, usable: np.ndarray
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        tail = len(self.labels) - self.plaid_size
        dead = self.plaid_size - int(self.alive[: self.plaid_size].sum())
        if self.plaid is None or max(tail, dead) > REBUILD_FRACTION * self.plaid_size:
            self._build_plaid()
        assert self.plaid is not None
        built = usable[: self.plaid_size]
        want = min(self.plaid_size, k + int((~built).sum()))
        self.plaid.rerank = max(PLAID_RERANK, want)
        tail_rows = np.flatnonzero(usable[self.plaid_size :]) + self.plaid_size
        tail_scores = exact_scores(queries, self._flat(), self.offsets, tail_rows)
        out = []
        for q, extra in zip(queries, tail_scores, strict=True):
            rows, scores = self.plaid.search_one(np.asarray(q, np.float32), want)
            keep = built[rows]
            rows = np.concatenate([rows[keep], tail_rows])
            out.append(self._top(np.concatenate([scores[keep], extra]), rows, k))
        return out

    def _build_plaid(self) -> None:
        """PLAID over every document held now (dead ones included, so rows stay positions)."""
        from ...encoders.multi_vector.flat import FlatTokens

        self.plaid = PlaidIndex(rerank=PLAID_RERANK).build(FlatTokens(self._flat(), self.offsets.copy()))
        self.plaid_size = len(self.labels)
