"""Clustering sentence embeddings: threshold-based community detection, k-means and HDBSCAN.

`community_detection` is sentence-transformers' fast clustering (same communities, same order, with
ties inside a community ordered by index). `kmeans_clusters` and `hdbscan_clusters` run scikit-learn
(an optional dependency) on the L2-normalized vectors, so that Euclidean distance orders pairs exactly
as cosine similarity does. `group_by_label` turns their labels into lists of row indices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from .paraphrase_mining import as_embedding_matrix, check_positive


def community_detection(
    embeddings: Any,
    threshold: float = 0.75,
    min_community_size: int = 10,
    batch_size: int = 1024,
    show_progress_bar: bool = False,
) -> list[list[int]]:
    """Communities of rows whose cosine similarity to a central row is at least `threshold`.

    Every row with at least `min_community_size` rows (itself included) at or above `threshold` is a
    candidate centre; candidates are taken largest first and each keeps the rows no earlier community
    claimed, if still `min_community_size` of them. Each community lists its centre first, then the
    others by decreasing similarity; communities come largest first. Scores are computed for
    `batch_size` rows at a time (memory: batch_size x N).
    """
    check_positive("min_community_size", min_community_size)
    check_positive("batch_size", batch_size)
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, not {threshold!r}")
    if isinstance(embeddings, (np.ndarray, torch.Tensor)) and embeddings.ndim == 1:
        embeddings = embeddings[None, :]
    if len(embeddings) == 0 or len(embeddings) < min_community_size:
        return []
    matrix = torch.nn.functional.normalize(as_embedding_matrix(embeddings), p=2, dim=1)
    n = matrix.shape[0]
    limit = torch.tensor(threshold, device=matrix.device)

    candidates: list[tuple[int, np.ndarray]] = []
    with torch.inference_mode():
        for start in tqdm(range(0, n, batch_size), desc="Finding communities", disable=not show_progress_bar):
            scores = matrix[start : start + batch_size] @ matrix.T
            above = scores >= limit
            counts = above.sum(dim=1)
            for row in torch.nonzero(counts >= min_community_size).squeeze(1).tolist():
                columns = torch.nonzero(above[row]).squeeze(1)
                order = torch.sort(-scores[row, columns], stable=True).indices
                candidates.append((start + row, columns[order].cpu().numpy()))
            del scores, above

    candidates.sort(key=lambda item: len(item[1]), reverse=True)
    communities: list[list[int]] = []
    used = np.zeros(n, dtype=bool)
    for centre, members in candidates:
        if used[centre]:
            continue
        free = members[~used[members]]
        if len(free) >= min_community_size:
            community = [centre, *free[free != centre].tolist()]
            communities.append(community)
            used[community] = True
    return sorted(communities, key=len, reverse=True)


def _normalized_numpy(embeddings: Any, normalize: bool) -> np.ndarray:
    matrix = as_embedding_matrix(embeddings)
    if normalize:
        matrix = torch.nn.functional.normalize(matrix, p=2, dim=1)
    return matrix.detach().cpu().numpy()


def _sklearn_cluster() -> Any:
    try:
        from sklearn import cluster
    except ImportError as error:
        raise ImportError(
            "k-means and HDBSCAN clustering need scikit-learn: pip install scikit-learn"
        ) from error
    return cluster


def kmeans_clusters(
    embeddings: Any, n_clusters: int, seed: int = 0, normalize: bool = True, n_init: int | str = "auto"
) -> np.ndarray:
    """k-means labels (0 .. n_clusters-1), one per row, with scikit-learn's KMeans.

    With `normalize` (default) rows are L2-normalized first (spherical k-means, i.e. cosine);
    `seed` makes the result reproducible.
    """
    check_positive("n_clusters", n_clusters)
    data = _normalized_numpy(embeddings, normalize)
    if n_clusters > len(data):
        raise ValueError(f"n_clusters ({n_clusters}) is larger than the number of embeddings ({len(data)})")
    model = _sklearn_cluster().KMeans(n_clusters=n_clusters, random_state=seed, n_init=n_init)
    return np.asarray(model.fit_predict(data), dtype=np.int64)


def hdbscan_clusters(
    embeddings: Any,
    min_cluster_size: int = 5,
    min_samples: int | None = None,
    cluster_selection_epsilon: float = 0.0,
    normalize: bool = True,
) -> np.ndarray:
    """HDBSCAN labels, one per row, with scikit-learn's HDBSCAN; -1 marks noise.

    The number of clusters is found from density, not given. With `normalize` (default) rows are
    L2-normalized first, so Euclidean distance ranks neighbours as cosine similarity does.
    """
    if isinstance(min_cluster_size, bool) or not isinstance(min_cluster_size, int) or min_cluster_size < 2:
        raise ValueError(f"min_cluster_size must be an integer of at least 2, not {min_cluster_size!r}")
    check_positive("min_samples", min_samples, allow_none=True)
    data = _normalized_numpy(embeddings, normalize)
    if len(data) < min_cluster_size:
        raise ValueError(
            f"min_cluster_size ({min_cluster_size}) is larger than the number of embeddings ({len(data)})"
        )
    model = _sklearn_cluster().HDBSCAN(
        min_cluster_size=min_cluster_size,
        min_samples=min_samples,
        cluster_selection_epsilon=cluster_selection_epsilon,
        copy=True,
    )
    return np.asarray(model.fit_predict(data), dtype=np.int64)


def group_by_label(labels: Sequence[int] | np.ndarray, noise_label: int | None = -1) -> list[list[int]]:
    """Row indices grouped by label: one ascending list per label, in ascending label order.

    Rows labelled `noise_label` (HDBSCAN's -1) are left out; pass None to keep every label.
    """
    values = np.asarray(labels)
    if values.ndim != 1:
        raise ValueError(f"labels must be a 1-D sequence, got shape {values.shape}")
    if values.size and not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"labels must be integers, got dtype {values.dtype}")
    if values.size == 0:
        return []
    order = np.argsort(values, kind="stable")
    unique, starts = np.unique(values[order], return_index=True)
    groups = np.split(order, starts[1:])
    return [g.tolist() for label, g in zip(unique.tolist(), groups, strict=True) if label != noise_label]
