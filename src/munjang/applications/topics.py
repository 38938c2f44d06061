"""Topics of a collection of short texts, as BERTopic finds them: embed -> UMAP -> HDBSCAN -> c-TF-IDF.

1. Embed every document (normalised).
2. Reduce to a few dimensions with UMAP (`reduction="umap"`, BERTopic's settings: 5 components,
   15 neighbours, cosine, min_dist 0), so density-based clustering is not lost in 384 dimensions;
   "pca" and "none" (cluster the embeddings themselves) need no optional package.
3. Cluster with HDBSCAN (scikit-learn's): `min_topic_size` is its smallest cluster; documents in no
   cluster are the outliers, topic -1. Topics are numbered by size, largest first (as BERTopic).
4. Describe each topic by its heaviest words under class-based TF-IDF (`class_tfidf`), counted over
   Kiwi nouns for Korean text and words for other text. The label is the id and the first four words
   joined by "_" (BERTopic's default label).
5. Representative documents: those closest (cosine) to the topic's mean embedding. BERTopic instead
   compares sampled documents' c-TF-IDF vectors with the topic's; the centroid needs no sampling.

Every random step is seeded (`seed`), so the same input gives the same topics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .class_tfidf import c_tf_idf, class_counts, top_words, topic_tokens
from .clustering import hdbscan_clusters
from .projection import project_2d, reduce_dimensions, umap_available

REDUCTIONS = ("auto", "umap", "pca", "none")


@dataclass
class Topic:
    """One topic: its id (-1 for the outliers), size, c-TF-IDF words, label and representative rows."""

    id: int
    size: int
    words: list[tuple[str, float]]
    label: str
    representative_docs: list[int] = field(default_factory=list)

    def to_dict(self, docs: Sequence[str] | None = None) -> dict[str, Any]:
        """JSON-ready: words as [word, weight] pairs; with `docs`, representative texts beside their rows."""
        out: dict[str, Any] = {
            "topic": self.id,
            "size": self.size,
            "label": self.label,
            "words": [[w, round(s, 6)] for w, s in self.words],
            "representative_docs": self.representative_docs,
        }
        if docs is not None:
            out["representative_texts"] = [docs[i] for i in self.representative_docs]
        return out


@dataclass
class TopicModel:
    """What `find_topics` found: the topics (outliers first when there are any, then by size), the
    topic of each document, 2-D map coordinates and how the embeddings were reduced and mapped."""

    topics: list[Topic]
    assignments: np.ndarray
    coordinates: np.ndarray
    reduction: str
    projection: str

    def topic(self, topic_id: int) -> Topic:
        """The topic with this id (KeyError when there is none)."""
        for t in self.topics:
            if t.id == topic_id:
                return t
        raise KeyError(f"no topic {topic_id}")

    @property
    def n_outliers(self) -> int:
        """Documents in no topic."""
        return int((self.assignments == -1).sum())


def _distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows of the first occurrence of each distinct row, in input order; for every row, the index
    of its distinct row among those). UMAP is not reproducible when rows repeat exactly (the same
    text twice), even with a seed, so it is run on distinct rows and the copies share their place;
    without repeats the input is unchanged."""
    _, first, inverse = np.unique(x, axis=0, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return np.sort(first), rank[np.asarray(inverse).ravel()]


def _reduce(
    raw: np.ndarray, vectors: np.ndarray, reduction: str, n_components: int, seed: int
) -> tuple[np.ndarray, str]:
    """UMAP of the distinct embeddings as given (cosine ignores their length, and re-normalising them
    would move UMAP off the result BERTopic gets from the same embeddings); PCA or none of the
    normalised."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"unknown reduction {reduction!r}; choose one of {', '.join(REDUCTIONS)}")
    distinct, back = _distinct_rows(raw)
    enough = len(distinct) > n_components + 1 and vectors.shape[1] > n_components
    if reduction == "auto":
        reduction = "umap" if umap_available() and enough else "none"
    if reduction == "none" or not enough:
        return vectors, "none"
    if reduction == "umap":
        return reduce_dimensions(raw[distinct], n_components, seed)[back], "umap"
    from sklearn.decomposition import PCA

    return np.asarray(PCA(n_components, svd_solver="full").fit_transform(vectors), dtype=np.float32), "pca"


def _by_size(labels: np.ndarray) -> np.ndarray:
    """Topic ids renumbered by size, largest first (ties: lower old id first); -1 stays -1."""
    ids, counts = np.unique(labels[labels >= 0], return_counts=True)
    order = sorted(zip(ids.tolist(), counts.tolist(), strict=True), key=lambda p: (-p[1], p[0]))
    mapping = {old: new for new, (old, _) in enumerate(order)}
    return np.asarray([mapping.get(int(v), -1) for v in labels], dtype=np.int64)


def _representatives(vectors: np.ndarray, rows: np.ndarray, n: int) -> list[int]:
    centre = vectors[rows].mean(axis=0)
    centre /= max(float(np.linalg.norm(centre)), 1e-12)
    scores = vectors[rows] @ centre
    return [int(rows[k]) for k in np.argsort(-scores, kind="stable")[:n]]


def topics_from_labels(
    vectors: np.ndarray,
    tokens: Sequence[Sequence[str]],
    labels: np.ndarray,
    n_words: int = 10,
    n_representative: int = 3,
) -> list[Topic]:
    """Topics described from given cluster labels (-1: outliers): c-TF-IDF words, labels, representatives."""
    classes, vocabulary, counts = class_counts(tokens, labels)
    words = top_words(c_tf_idf(counts), vocabulary, n_words)
    topics = []
    for topic_id, topic_words in zip(classes, words, strict=True):
        rows = np.flatnonzero(labels == topic_id)
        label = f"{topic_id}_" + "_".join(w for w, _ in topic_words[:4])
        representative = [] if topic_id == -1 else _representatives(vectors, rows, n_representative)
        topics.append(Topic(topic_id, len(rows), topic_words, label, representative))
    return topics


def find_topics(
    encoder: Any,
    docs: Sequence[str],
    min_topic_size: int = 10,
    n_words: int = 10,
    reduction: str = "auto",
    n_components: int = 5,
    seed: int = 0,
    stop_words: str | Sequence[str] | None = "english",
    n_representative: int = 3,
    embeddings: np.ndarray | None = None,
    prompt_name: str | None = None,
    batch_size: int = 32,
    show_progress_bar: bool = False,
) -> TopicModel:
    """Topics of `docs` (see the module docstring); `embeddings` skips encoding when given.

    `reduction`: "auto" (UMAP when umap-learn is installed, otherwise none), "umap", "pca" or "none".
    The 2-D map coordinates come from the embeddings (UMAP after a UMAP reduction, PCA otherwise).
    """
    if isinstance(docs, str):
        raise TypeError("docs must be a list of documents, not a single string")
    docs = list(docs)
    if n_words < 1 or n_representative < 0:
        raise ValueError("n_words must be at least 1 and n_representative at least 0")
    if embeddings is None:
        embeddings = encoder.encode(
            docs, prompt_name=prompt_name, batch_size=batch_size, show_progress_bar=show_progress_bar
        )
    raw = np.asarray(embeddings, dtype=np.float32)
    if raw.ndim != 2 or len(raw) != len(docs):
        raise ValueError(f"embeddings must be one row per document: {raw.shape} for {len(docs)} docs")
    vectors = raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)
    reduced, used = _reduce(raw, vectors, reduction, n_components, seed)
    labels = _by_size(hdbscan_clusters(reduced, min_cluster_size=min_topic_size, normalize=used == "none"))
    tokens = topic_tokens(docs, stop_words, show_progress_bar)
    topics = topics_from_labels(vectors, tokens, labels, n_words, n_representative)
    distinct, back = _distinct_rows(raw)
    coordinates, projection = project_2d(vectors[distinct], "umap" if used == "umap" else "pca", seed)
    coordinates = coordinates[back]
    return TopicModel(topics, labels, coordinates, used, projection)
