"""Near-duplicate detection: groups of rows (or texts) that say the same thing.

Pairs at or above a similarity threshold are mined with `paraphrase_mining_embeddings` (bounded
memory, each row looking at its `top_k` nearest rows), and the groups are the connected components of
the graph they form (scipy). Rows that are exactly equal, and texts that are exactly equal, are always
one group, whatever `top_k` and the threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .paraphrase_mining import as_embedding_matrix, check_positive, paraphrase_mining_embeddings

if TYPE_CHECKING:
    from ..encoders.embedder import Embedder


def _exact_groups(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, owner): the first index of each distinct row, ascending, and for every row the position
    in `first` of the row equal to it."""
    contiguous = np.ascontiguousarray(rows)
    keys = contiguous.view(np.dtype((np.void, contiguous.dtype.itemsize * contiguous.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return first[order], rank[np.ravel(inverse)]


def near_duplicates(
    embeddings: Any,
    threshold: float = 0.95,
    top_k: int = 100,
    score_function: str = "cosine",
    query_chunk_size: int = 5000,
    corpus_chunk_size: int = 100_000,
    show_progress_bar: bool = False,
) -> list[list[int]]:
    """Groups of near-duplicate rows: connected components of the pairs scoring at least `threshold`.

    Returns only groups of two or more rows; each group is ascending, groups are ordered by their
    first row. Each row is linked to its `top_k` most similar rows at most (a row with more near
    duplicates than that is still reached through them). Equal rows are always grouped.
    """
    matrix = as_embedding_matrix(embeddings)
    n = matrix.shape[0]
    if n < 2:
        return []
    first, owner = _exact_groups(matrix.detach().cpu().numpy())
    pairs = paraphrase_mining_embeddings(
        matrix[first] if len(first) < n else matrix,
        top_k=top_k,
        max_pairs=None,
        query_chunk_size=query_chunk_size,
        corpus_chunk_size=corpus_chunk_size,
        score_function=score_function,
        threshold=threshold,
        show_progress_bar=show_progress_bar,
    )
    m = len(first)
    edges = np.asarray([(i, j) for _, i, j in pairs], dtype=np.int64).reshape(-1, 2)
    graph = coo_matrix((np.ones(len(edges), dtype=np.int8), (edges[:, 0], edges[:, 1])), shape=(m, m))
    _, component = connected_components(graph, directed=False)
    labels = component[owner]
    order = np.argsort(labels, kind="stable")
    _, starts = np.unique(labels[order], return_index=True)
    groups = [g.tolist() for g in np.split(order, starts[1:]) if len(g) > 1]
    return sorted(groups, key=lambda g: g[0])


def deduplicate(
    texts: Sequence[str],
    model: Embedder,
    threshold: float = 0.95,
    batch_size: int = 32,
    top_k: int = 100,
    show_progress_bar: bool = False,
) -> list[int]:
    """Indices of `texts` to keep (ascending): the first text of every near-duplicate group, and every
    text that has none. Equal texts are encoded once and always count as duplicates."""
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a list of strings")
    check_positive("batch_size", batch_size)
    first_of: dict[str, int] = {}
    for index, text in enumerate(texts):
        first_of.setdefault(text, index)
    distinct = list(first_of.values())
    if len(distinct) < 2:
        return distinct
    embeddings = model.encode(
        [texts[i] for i in distinct],
        batch_size=batch_size,
        show_progress_bar=show_progress_bar,
        convert_to_tensor=True,
    )
    groups = near_duplicates(
        embeddings, threshold=threshold, top_k=top_k, show_progress_bar=show_progress_bar
    )
    dropped = {distinct[i] for group in groups for i in group[1:]}
    return [i for i in distinct if i not in dropped]
