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


def _positions(results: Sequence[Ranked]) -> tuple[dict[Hashable, list[int | None]], dict[Hashable, int]]:
    """Per key: its 1-based rank in each list; and a tie-break position (interleaved by rank)."""
    ranks: dict[Hashable, list[int | None]] = {}
    order: dict[Hashable, int] = {}
    for i, ranked in enumerate(results):
        seen: set[Hashable] = set()
        for rank, (key, _) in enumerate(ranked, start=1):
            if key in seen:
                raise ValueError(f"result list {i} contains {key!r} twice")
            seen.add(key)
            ranks.setdefault(key, [None] * len(results))[i] = rank
    depth = max((len(r) for r in results), default=0)
    for rank in range(depth):
        for ranked in results:
            if rank < len(ranked):
                order.setdefault(ranked[rank][0], len(order))
    return ranks, order


def _finish(
    fused: dict[Hashable, float],
    results: Sequence[Ranked],
    ranks: dict[Hashable, list[int | None]],
    order: dict[Hashable, int],
    top_k: int | None,
) -> list[FusedHit]:
    raw = [dict(r) for r in results]
    keys = sorted(
        fused,
        key=lambda d: (-fused[d], min(r for r in ranks[d] if r is not None), order[d]),
    )
    if top_k is not None:
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, not {top_k}")
        keys = keys[:top_k]
    return [
        FusedHit(
            key=d,
            score=fused[d],
            ranks=tuple(ranks[d]),
            scores=tuple(float(r[d]) if d in r else None for r in raw),
        )
        for d in keys
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
    ranks, order = _positions(results)
    fused = {
        key: sum(w[i] / (k + rank) for i, rank in enumerate(key_ranks) if rank is not None)
        for key, key_ranks in ranks.items()
    }
    return _finish(fused, results, ranks, order, top_k)


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
    ranks, order = _positions(results)
    normalized: list[dict[Hashable, float]] = []
    floors: list[float] = []
    for ranked in results:
        values = normalize_scores([s for _, s in ranked], normalization)
        normalized.append({key: float(v) for (key, _), v in zip(ranked, values, strict=True)})
        floors.append(float(values.min()) if values.size else 0.0)
    fused = {key: sum(w[i] * normalized[i].get(key, floors[i]) for i in range(len(results))) for key in ranks}
    return _finish(fused, results, ranks, order, top_k)


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
