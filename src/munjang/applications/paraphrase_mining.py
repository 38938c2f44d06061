"""Paraphrase mining: the most similar pairs among N sentences, without an N x N score matrix.

Every sentence is compared with every other one block by block (`query_chunk_size` x
`corpus_chunk_size` scores at a time); each sentence keeps its `top_k` best neighbours, and the pairs
they form are merged into a running best list of at most `max_pairs`. Memory is therefore bounded by
the block, the per-query neighbour lists and `max_pairs`, whatever N is.

The results are those of sentence-transformers' `util.paraphrase_mining_embeddings`, with ties broken
deterministically: among equal scores the lower index wins, both when picking a sentence's
neighbours and when cutting the pair list at `max_pairs`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tqdm.auto import tqdm

from ..encoders.formats import SIMILARITY_FUNCTIONS
from ..similarity import as_tensor, similarity

if TYPE_CHECKING:
    from ..encoders.embedder import Embedder

Pair = tuple[float, int, int]


def check_positive(name: str, value: int | None, allow_none: bool = False) -> None:
    """ValueError naming `name` unless `value` is an integer >= 1 (or None, with `allow_none`)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, not {value!r}")


def as_embedding_matrix(embeddings: Any) -> torch.Tensor:
    """`embeddings` as a 2-D floating tensor (half precision widened to float32), checked for NaN/inf."""
    if isinstance(embeddings, (np.ndarray, torch.Tensor)) and embeddings.ndim != 2:
        raise ValueError(
            f"embeddings must be a 2-D array (sentences x dimensions), got shape {tuple(embeddings.shape)}"
        )
    matrix, _ = as_tensor(embeddings)
    if matrix.dtype in (torch.float16, torch.bfloat16):
        matrix = matrix.float()
    finite = torch.isfinite(matrix).all(dim=1)
    if not bool(finite.all()):
        row = int(torch.nonzero(~finite)[0, 0])
        raise ValueError(f"embeddings contain NaN or infinite values (first in row {row})")
    return matrix


def _sorted_rows(scores: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's first `k` entries by score, descending, ties by lower id."""
    order = np.lexsort((ids, -scores), axis=1)[:, :k]
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(ids, order, axis=1)


def _block_top_k(block: torch.Tensor, k: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """The top `k` columns of every row of `block` (scores, global ids), ties by lower column.

    torch.topk leaves ties unordered, so one extra column is taken: a row whose k-th and (k+1)-th
    scores are equal has a tie at the cut, and only such rows are redone exactly.
    """
    width = min(k + 1, block.shape[1])
    values, columns = torch.topk(block, width, dim=1)
    scores = values.cpu().numpy()
    ids = columns.cpu().numpy().astype(np.int64) + offset
    if width > k:
        for row in np.nonzero(scores[:, k - 1] == scores[:, k])[0]:
            full = block[row]
            candidates = torch.nonzero(full >= full.new_tensor(scores[row, k - 1])).squeeze(1)
            candidate_scores = full[candidates].cpu().numpy()
            best = np.lexsort((candidates.cpu().numpy(), -candidate_scores))[:k]
            scores[row, :k] = candidate_scores[best]
            ids[row, :k] = candidates.cpu().numpy()[best] + offset
    return _sorted_rows(scores, ids, k)


def _best_pairs(
    scores: np.ndarray, first: np.ndarray, second: np.ndarray, n: int, max_pairs: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct pairs (the first occurrence of each is kept), the best `max_pairs`, best first."""
    _, keep = np.unique(first * n + second, return_index=True)
    if len(keep) < len(scores):
        scores, first, second = scores[keep], first[keep], second[keep]
    order = np.lexsort((second, first, -scores))
    if max_pairs is not None:
        order = order[:max_pairs]
    return scores[order], first[order], second[order]


def paraphrase_mining_embeddings(
    embeddings: Any,
    top_k: int = 100,
    max_pairs: int | None = 500_000,
    query_chunk_size: int = 5000,
    corpus_chunk_size: int = 100_000,
    score_function: str = "cosine",
    threshold: float | None = None,
    show_progress_bar: bool = False,
) -> list[Pair]:
    """The most similar pairs of rows of `embeddings`: `(score, i, j)` with `i < j`, best first.

    Each row contributes its `top_k` most similar other rows; of the distinct pairs so found, the best
    `max_pairs` (None: all) with a score of at least `threshold` (None: any) are returned. Equal scores
    are ordered by `i`, then `j`. `score_function` is one of cosine, dot, euclidean, manhattan
    (distances are negated, so larger is always more similar). Memory grows with
    `query_chunk_size * corpus_chunk_size`, `query_chunk_size * top_k` and `max_pairs`, never N².
    """
    check_positive("top_k", top_k)
    check_positive("max_pairs", max_pairs, allow_none=True)
    check_positive("query_chunk_size", query_chunk_size)
    check_positive("corpus_chunk_size", corpus_chunk_size)
    if score_function not in SIMILARITY_FUNCTIONS:
        raise ValueError(
            f"unknown score_function {score_function!r}; choose from {', '.join(SIMILARITY_FUNCTIONS)}"
        )
    if threshold is not None and not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number or None, not {threshold!r}")
    matrix = as_embedding_matrix(embeddings)
    n = matrix.shape[0]
    if n < 2:
        return []
    if score_function == "cosine":  # normalize once, then every block is a plain matrix product
        matrix = torch.nn.functional.normalize(matrix, p=2, dim=1)
        score_function = "dot"

    k = min(top_k, n - 1)
    pair_scores = np.zeros(0, dtype=np.float64)
    pair_first = np.zeros(0, dtype=np.int64)
    pair_second = np.zeros(0, dtype=np.int64)
    query_starts = range(0, n, query_chunk_size)
    corpus_starts = range(0, n, corpus_chunk_size)
    progress = tqdm(
        total=len(query_starts) * len(corpus_starts),
        desc="Mining paraphrases",
        unit="block",
        disable=not show_progress_bar,
    )
    with torch.inference_mode(), progress:
        for q_start in query_starts:
            queries = matrix[q_start : q_start + query_chunk_size]
            q_end = q_start + queries.shape[0]
            best_scores = np.zeros((queries.shape[0], 0), dtype=np.float64)
            best_ids = np.zeros((queries.shape[0], 0), dtype=np.int64)
            for c_start in corpus_starts:
                corpus = matrix[c_start : c_start + corpus_chunk_size]
                block = similarity(queries, corpus, score_function)
                lo, hi = max(q_start, c_start), min(q_end, c_start + corpus.shape[0])
                if lo < hi:  # a row is never its own neighbour
                    diagonal = torch.arange(lo, hi, device=block.device)
                    block[diagonal - q_start, diagonal - c_start] = float("-inf")
                scores, ids = _block_top_k(block, k, c_start)
                del block
                best_scores, best_ids = _sorted_rows(
                    np.concatenate([best_scores, scores], axis=1),
                    np.concatenate([best_ids, ids], axis=1),
                    k,
                )
                progress.update()

            rows = np.repeat(np.arange(q_start, q_end, dtype=np.int64), best_ids.shape[1])
            scores, ids = best_scores.ravel(), best_ids.ravel()
            keep = ids != rows
            if threshold is not None:
                keep &= scores >= threshold
            if max_pairs is not None and len(pair_scores) == max_pairs:
                keep &= scores >= pair_scores[-1]  # anything lower cannot enter a full list
            rows, scores, ids = rows[keep], scores[keep], ids[keep]
            pair_scores, pair_first, pair_second = _best_pairs(
                np.concatenate([pair_scores, scores]),
                np.concatenate([pair_first, np.minimum(rows, ids)]),
                np.concatenate([pair_second, np.maximum(rows, ids)]),
                n,
                max_pairs,
            )
    return list(zip(pair_scores.tolist(), pair_first.tolist(), pair_second.tolist(), strict=True))


def paraphrase_mining(
    model: Embedder,
    sentences: Sequence[str],
    batch_size: int = 32,
    top_k: int = 100,
    max_pairs: int | None = 500_000,
    query_chunk_size: int = 5000,
    corpus_chunk_size: int = 100_000,
    score_function: str = "cosine",
    threshold: float | None = None,
    show_progress_bar: bool = False,
) -> list[Pair]:
    """Encode `sentences` with `model`, then `paraphrase_mining_embeddings` over them.

    Returns `(score, i, j)` with indices into `sentences`, `i < j`, best first.
    """
    if isinstance(sentences, str) or not all(isinstance(s, str) for s in sentences):
        raise TypeError("sentences must be a list of strings")
    check_positive("batch_size", batch_size)
    if len(sentences) < 2:
        return []
    embeddings = model.encode(
        list(sentences), batch_size=batch_size, show_progress_bar=show_progress_bar, convert_to_tensor=True
    )
    return paraphrase_mining_embeddings(
        embeddings,
        top_k=top_k,
        max_pairs=max_pairs,
        query_chunk_size=query_chunk_size,
        corpus_chunk_size=corpus_chunk_size,
        score_function=score_function,
        threshold=threshold,
        show_progress_bar=show_progress_bar,
    )
