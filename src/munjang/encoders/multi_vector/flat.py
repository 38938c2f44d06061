"""Many documents' token vectors in one array: `vectors` (all tokens, dim) and `offsets` (documents + 1),
document i owning rows offsets[i]:offsets[i+1]. The layout the multi-vector indexes store and the
exact MaxSim search (brute force, the reference an index is measured against) reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .maxsim import as_token_matrix


@dataclass
class FlatTokens:
    vectors: np.ndarray  # (tokens, dim), float16 or float32
    offsets: np.ndarray  # (documents + 1,) int64

    @classmethod
    def from_sets(cls, sets: Sequence[Any], dtype: Any = np.float16) -> FlatTokens:
        mats = [as_token_matrix(s, "documents").numpy() for s in sets]
        dims = {m.shape[1] for m in mats}
        if len(dims) > 1:
            raise ValueError(f"documents must share one token dimension, got {sorted(dims)}")
        lengths = np.array([m.shape[0] for m in mats], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        dim = dims.pop() if dims else 0
        vectors = np.concatenate(mats).astype(dtype) if mats else np.zeros((0, dim), dtype)
        return cls(vectors, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def doc_of_token(self) -> np.ndarray:
        """The document of every token row."""
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.offsets))

    def doc(self, i: int) -> np.ndarray:
        return self.vectors[self.offsets[i] : self.offsets[i + 1]]


def token_rows(offsets: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The token rows of the chosen documents, laid end to end, and each document's token count."""
    starts, ends = offsets[docs], offsets[docs + 1]
    lengths = ends - starts
    total = int(lengths.sum())
    local = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.int64) + np.repeat(starts - local, lengths), lengths


def maxsim_rows(query: np.ndarray, vectors: np.ndarray, offsets: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """Exact MaxSim of one query (tokens, dim) with the chosen documents of a flat store."""
    if len(docs) == 0:
        return np.zeros(0, np.float32)
    rows, lengths = token_rows(offsets, docs)
    sims = query.astype(np.float32) @ vectors[rows].astype(np.float32).T  # (q tokens, candidate tokens)
    best = np.full((query.shape[0], len(docs)), -np.inf, dtype=np.float32)
    segment_max(sims, lengths, best)
    best[~np.isfinite(best)] = 0.0
    return best.sum(axis=0)


def segment_max(sims: np.ndarray, lengths: np.ndarray, out: np.ndarray) -> None:
    """out[:, j] = max over segment j's columns of sims (segments laid end to end, `lengths` long)."""
    nonempty = lengths > 0
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    if nonempty.any():
        out[:, nonempty] = np.maximum.reduceat(sims, starts[nonempty], axis=1)


def brute_force_top_k(
    queries: Sequence[Any], store: FlatTokens, k: int, chunk_elements: int = 64_000_000
) -> tuple[np.ndarray, np.ndarray]:
    """Exact MaxSim top-k of each query over the whole store: (doc rows (q, k), scores (q, k)).

    Every query's tokens go through one matrix product per chunk of document tokens, so the corpus
    is read once for all queries; `chunk_elements` bounds the (query tokens x document tokens) block.
    """
    qs = [as_token_matrix(q, "queries").numpy().astype(np.float32) for q in queries]
    k = min(k, len(store))
    q_all = np.concatenate(qs) if qs else np.zeros((0, store.dim), np.float32)
    q_starts = np.concatenate([[0], np.cumsum([len(q) for q in qs])[:-1]]).astype(np.int64)
    scores = np.zeros((len(qs), len(store)), dtype=np.float32)
    chunk_tokens = max(1, chunk_elements // max(1, len(q_all)))
    doc = 0
    while doc < len(store):
        end_doc = int(np.searchsorted(store.offsets, store.offsets[doc] + chunk_tokens, side="right")) - 1
        end_doc = max(end_doc, doc + 1)
        lo, hi = store.offsets[doc], store.offsets[end_doc]
        sims = q_all @ store.vectors[lo:hi].astype(np.float32).T
        lengths = np.diff(store.offsets[doc : end_doc + 1])
        best = np.full((len(q_all), end_doc - doc), -np.inf, dtype=np.float32)
        segment_max(sims, lengths, best)
        best[~np.isfinite(best)] = 0.0
        scores[:, doc:end_doc] = np.add.reduceat(best, q_starts, axis=0) if len(qs) else 0
        doc = end_doc
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k] if k else np.zeros((len(qs), 0), np.int64)
    top_scores = np.take_along_axis(scores, top, axis=1)
    order = np.argsort(-top_scores, axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1), np.take_along_axis(top_scores, order, axis=1)
