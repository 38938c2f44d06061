"""Hybrid search: fuse ranked lists from different retrievers (dense, BM25, ...) into one ranking.

Each input is one retriever's result for one query: (key, score) pairs, best first.

- Reciprocal rank fusion (Cormack et al. 2009) uses ranks only, so it needs no score calibration:

      RRF(d) = Σ_i  w_i / (k + rank_i(d))        (rank 1-based; lists without d add nothing)

- Weighted fusion normalizes each list's scores, then sums them with weights:

      F(d) = Σ_i  w_i · norm_i(s_i(d))

  with norm = min-max to [0, 1] (default), z-score, or none. A document missing from a list gets
  that list's lowest normalized value (it ranked below everything the retriever returned).

Equal fused scores are ordered by the document's best rank in any list, then by the order in which
the lists were given, so the fusion is deterministic.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

NORMALIZATIONS = ("minmax", "zscore", "none")
# Weights are relative; a cap keeps every fused score finite (1e308 + 1e308 overflows to inf).
MAX_WEIGHT = 1e6
FUSIONS = ("rrf", "weighted")

Ranked = Sequence[tuple[Hashable, float]]


@dataclass(frozen=True)
class FusedHit:
    """A fused result: the document key, its fused score, and its rank and raw score in each input
    list (None where that list did not return it)."""

    key: Hashable
    score: float
    ranks: tuple[int | None, ...]
    scores: tuple[float | None, ...]


def check_weights(n_lists: int, weights: Sequence[float] | None) -> list[float]:
    """The weights as floats (1 each when None); ValueError unless there is one per list, each in
    [0, MAX_WEIGHT], one of them positive."""
    if weights is None:
        return [1.0] * n_lists
    if len(weights) != n_lists:
        raise ValueError(f"got {len(weights)} weights for {n_lists} result lists")
    values = [float(w) for w in weights]
    if any(not math.isfinite(w) or w < 0 or w > MAX_WEIGHT for w in values):
        raise ValueError(f"weights must be between 0 and {MAX_WEIGHT:g}, got {list(weights)}")
    if sum(values) == 0:
        raise ValueError("at least one weight must be positive")
    return values


class _Table:
    """The lists as arrays over their keys (each key once): its 1-based rank in each list (0 where
    the list lacks it) and the raw scores, so fusion is arithmetic on columns, not a dict per key."""

    def __init__(self, results: Sequence[Ranked]) -> None:
        index: dict[Hashable, int] = {}
        rows: list[np.ndarray] = []
        for i, ranked in enumerate(results):
            keys = [key for key, _ in ranked]
            found = np.fromiter((index.setdefault(key, len(index)) for key in keys), np.int64, len(keys))
            if len(np.unique(found)) != len(found):
                counts = Counter(keys)
                twice = next(key for key in keys if counts[key] > 1)
                raise ValueError(f"result list {i} contains {twice!r} twice")
            rows.append(found)
        self.keys = list(index)
        self.rows = rows
        self.ranks = np.zeros((len(index), len(results)), dtype=np.int64)
        self.raw = np.full((len(index), len(results)), np.nan)
        for i, (found, ranked) in enumerate(zip(rows, results, strict=True)):
            self.ranks[found, i] = np.arange(1, len(found) + 1)
            self.raw[found, i] = [float(score) for _, score in ranked]

    def finish(self, fused: np.ndarray, top_k: int | None) -> list[FusedHit]:
        """Best first: by fused score, then the key's best rank in any list, then the first list
        that gives it that rank (the order in which the lists were given)."""
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be at least 1, not {top_k}")
        if not self.keys:
            return []
        present = np.where(self.ranks > 0, self.ranks, np.iinfo(np.int64).max)
        order = np.lexsort((present.argmin(axis=1), present.min(axis=1), -fused))[:top_k]
        ranks, raw, scores = self.ranks[order].tolist(), self.raw[order].tolist(), fused[order].tolist()
        return [
            FusedHit(
                key=self.keys[d],
                score=scores[j],
                ranks=tuple(r or None for r in ranks[j]),
                scores=tuple(None if s != s else s for s in raw[j]),  # NaN: the list lacks it
            )
            for j, d in enumerate(order.tolist())
        ]


def reciprocal_rank_fusion(
    results: Sequence[Ranked],
    k: float = 60.0,
    weights: Sequence[float] | None = None,
    top_k: int | None = None,
) -> list[FusedHit]:
    """Fuse ranked lists by Σ w_i / (k + rank_i); k = 60 as in the original paper."""
    if k < 0:
        raise ValueError(f"the RRF constant k must be non-negative, not {k}")
    w = check_weights(len(results), weights)
    table = _Table(results)
    fused = np.zeros(len(table.keys))
    for i in range(len(results)):  # summed list by list, as Σ_i reads
        ranks = table.ranks[:, i]
        # absent (rank 0) contributes 0; max(rank, 1) keeps k = 0 from dividing by zero there
        fused = fused + np.where(ranks > 0, w[i] / (k + np.maximum(ranks, 1)), 0.0)
    return table.finish(fused, top_k)


def normalize_scores(scores: Sequence[float] | np.ndarray, method: str = "minmax") -> np.ndarray:
    """Scores of one list mapped to a common scale: min-max to [0, 1], z-score, or unchanged.

    A list whose scores are all equal maps to 1.0 under min-max (every hit is as good as the best)
    and to 0.0 under z-score.
    """
    if method not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {method!r}; choose one of {', '.join(NORMALIZATIONS)}")
    values = np.asarray(scores, dtype=np.float64)
    if values.size and not np.isfinite(values).all():
        raise ValueError("scores must be finite numbers")
    if method == "none" or values.size == 0:
        return values
    if method == "minmax":
        low, high = values.min(), values.max()
        return np.ones_like(values) if high == low else (values - low) / (high - low)
    std = values.std()
    return np.zeros_like(values) if std == 0 else (values - values.mean()) / std


def weighted_fusion(
    results: Sequence[Ranked],
    weights: Sequence[float] | None = None,
    normalization: str = "minmax",
    top_k: int | None = None,
) -> list[FusedHit]:
    """Fuse lists by the weighted sum of their normalized scores (see the module docstring)."""
    w = check_weights(len(results), weights)
    table = _Table(results)
    fused = np.zeros(len(table.keys))
    for i, ranked in enumerate(results):  # summed list by list, as Σ_i reads
        values = normalize_scores([s for _, s in ranked], normalization)
        column = np.full(len(table.keys), float(values.min()) if values.size else 0.0)
        column[table.rows[i]] = values
        fused = fused + w[i] * column
    return table.finish(fused, top_k)


def fuse(
    results: Sequence[Ranked],
    method: str = "rrf",
    weights: Sequence[float] | None = None,
    rrf_k: float = 60.0,
    normalization: str = "minmax",
    top_k: int | None = None,
) -> list[FusedHit]:
    """One entry point for both fusions, so callers can pick the method per query."""
    if method == "rrf":
        return reciprocal_rank_fusion(results, k=rrf_k, weights=weights, top_k=top_k)
    if method == "weighted":
        return weighted_fusion(results, weights=weights, normalization=normalization, top_k=top_k)
    raise ValueError(f"unknown fusion {method!r}; choose one of {', '.join(FUSIONS)}")
