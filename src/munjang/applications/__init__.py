"""Applications on sentence embeddings: paraphrase mining over many sentences in bounded memory,
clustering (community detection, k-means, HDBSCAN) and near-duplicate detection."""

from .clustering import community_detection, group_by_label, hdbscan_clusters, kmeans_clusters
from .near_duplicates import deduplicate, near_duplicates
from .paraphrase_mining import paraphrase_mining, paraphrase_mining_embeddings

__all__ = [
    "community_detection",
    "deduplicate",
    "group_by_label",
    "hdbscan_clusters",
    "kmeans_clusters",
    "near_duplicates",
    "paraphrase_mining",
    "paraphrase_mining_embeddings",
]
