"""Ranking metrics for retrieval and reranking, with binary relevance (a document is relevant or not).

For one query with ranked document ids r_1, r_2, ... and the set R of relevant ids:

    MRR@k      = 1 / (rank of the first relevant id within the top k), 0 if none
    Recall@k   = |top k ∩ R| / |R|
    nDCG@k     = DCG@k / IDCG@k,  DCG@k = Σ_{i≤k, r_i ∈ R} 1 / log2(i + 1),  IDCG@k = DCG of a perfect ranking
    AP         = (1 / |R|) Σ_{i: r_i ∈ R} precision@i   (over the whole ranking given)

Each function scores one query; `mean_metrics` averages over queries. These are the definitions
of the BEIR / MTEB / sentence-transformers retrieval evaluators.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Sequence

import numpy as np


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")


def mrr_at_k(ranked: Sequence[Hashable], relevant: Collection[Hashable], k: int) -> float:
    """Reciprocal rank of the first relevant id in the top k (0 when there is none)."""
    _check_k(k)
    for i, doc in enumerate(ranked[:k]):
        if doc in relevant:
            return 1.0 / (i + 1)
    return 0.0


def recall_at_k(ranked: Sequence[Hashable], relevant: Collection[Hashable], k: int) -> float:
    """Share of the relevant ids found in the top k."""
    _check_k(k)
    if not relevant:
        raise ValueError("a query needs at least one relevant document")
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def ndcg_at_k(ranked: Sequence[Hashable], relevant: Collection[Hashable], k: int) -> float:
    """Normalised discounted cumulative gain of the top k, binary gains."""
    _check_k(k)
    if not relevant:
        raise ValueError("a query needs at least one relevant document")
    dcg = sum(1.0 / math.log2(i + 2) for i, doc in enumerate(ranked[:k]) if doc in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal


def average_precision(ranked: Sequence[Hashable], relevant: Collection[Hashable]) -> float:
    """Mean of precision@i over the ranks i of the relevant ids (missing ones count 0)."""
    if not relevant:
        raise ValueError("a query needs at least one relevant document")
    hits = 0
    total = 0.0
    for i, doc in enumerate(ranked):
        if doc in relevant:
            hits += 1
            total += hits / (i + 1)
    return total / len(relevant)


def mean_metrics(
    rankings: Sequence[Sequence[Hashable]],
    relevant: Sequence[Collection[Hashable]],
    ks: Sequence[int] = (1, 3, 5, 10, 100),
) -> dict[str, float]:
    """MRR@k, nDCG@k, Recall@k for each k and MAP, averaged over queries (keys such as "ndcg@10")."""
    if len(rankings) != len(relevant):
        raise ValueError(f"{len(rankings)} rankings but {len(relevant)} relevance sets")
    if not rankings:
        raise ValueError("no queries to evaluate")
    out: dict[str, float] = {}
    for k in ks:
        out[f"mrr@{k}"] = float(
            np.mean([mrr_at_k(r, rel, k) for r, rel in zip(rankings, relevant, strict=True)])
        )
        out[f"ndcg@{k}"] = float(
            np.mean([ndcg_at_k(r, rel, k) for r, rel in zip(rankings, relevant, strict=True)])
        )
        out[f"recall@{k}"] = float(
            np.mean([recall_at_k(r, rel, k) for r, rel in zip(rankings, relevant, strict=True)])
        )
    out["map"] = float(
        np.mean([average_precision(r, rel) for r, rel in zip(rankings, relevant, strict=True)])
    )
    return out
