"""Applications on sentence embeddings: paraphrase mining over many sentences in bounded memory,
clustering (community detection, k-means, HDBSCAN), near-duplicate detection, keywords (KeyBERT's
ranking over Korean noun phrases) and topics (BERTopic's embed -> UMAP -> HDBSCAN -> c-TF-IDF)."""

from .candidates import extract_candidates, korean_candidates
from .clustering import community_detection, group_by_label, hdbscan_clusters, kmeans_clusters
from .keywords import Keyword, extract_keywords
from .near_duplicates import deduplicate, near_duplicates
from .paraphrase_mining import paraphrase_mining, paraphrase_mining_embeddings
from .topics import Topic, TopicModel, find_topics

__all__ = [
    "Keyword",
    "Topic",
    "TopicModel",
    "community_detection",
    "deduplicate",
    "extract_candidates",
    "extract_keywords",
    "find_topics",
    "group_by_label",
    "hdbscan_clusters",
    "kmeans_clusters",
    "korean_candidates",
    "near_duplicates",
    "paraphrase_mining",
    "paraphrase_mining_embeddings",
]
