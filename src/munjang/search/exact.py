"""Exact (brute-force) semantic search: score every corpus vector, keep the top k per query.

The corpus is scored in chunks so memory stays at queries x chunk, not queries x corpus.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..similarity import _as_tensor, similarity


@dataclass(frozen=True)
class Hit:
    """One search result: the corpus row and its score (larger is more similar)."""

    corpus_id: int
    score: float


def semantic_search(
    query_embeddings: Any,
    corpus_embeddings: Any,
    top_k: int = 10,
    score_function: str = "cosine",
    corpus_chunk_size: int = 100_000,
) -> list[list[Hit]]:
    """For each query, the `top_k` corpus rows by `score_function`, best first.

    Ties keep the lower corpus id first, so results are deterministic.
    """
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, not {top_k}")
    queries, _ = _as_tensor(query_embeddings)
    corpus, _ = _as_tensor(corpus_embeddings)
    if corpus.shape[0] == 0:
        return [[] for _ in range(queries.shape[0])]
    k = min(top_k, corpus.shape[0])
    best_scores = torch.full((queries.shape[0], 0), float("-inf"))
    best_ids = torch.zeros((queries.shape[0], 0), dtype=torch.long)
    for start in range(0, corpus.shape[0], corpus_chunk_size):
        chunk = corpus[start : start + corpus_chunk_size]
        scores = similarity(queries, chunk, score_function).float().cpu()
        ids = torch.arange(start, start + chunk.shape[0]).expand(queries.shape[0], -1)
        all_scores = torch.cat([best_scores, scores], dim=1)
        all_ids = torch.cat([best_ids, ids], dim=1)
        # Stable sort on -score keeps equal scores in corpus order.
        order = torch.sort(-all_scores, dim=1, stable=True).indices[:, :k]
        best_scores = torch.gather(all_scores, 1, order)
        best_ids = torch.gather(all_ids, 1, order)
    return [
        [Hit(int(i), float(s)) for i, s in zip(ids_row.tolist(), scores_row.tolist(), strict=True)]
        for ids_row, scores_row in zip(best_ids, best_scores, strict=True)
    ]
