"""Topics: clusters recovered from embeddings, described by their c-TF-IDF nouns, numbered by size,
reproducible; the UMAP path (slow: numba compiles on first use) on real encodings."""

from __future__ import annotations

import numpy as np
import pytest

from munjang.applications import find_topics
from munjang.applications import topics as topics_module
from munjang.applications.projection import umap_available

THEMES = {
    "날씨": ["오늘 날씨가 맑다", "날씨가 추워서 집에 있었다", "내일 날씨는 비", "날씨가 나쁘다"],
    "치킨": ["저녁에 치킨을 먹었다", "치킨이 먹고 싶다", "치킨 배달을 시켰다", "친구와 치킨을 나눠 먹었다"],
    "시험": ["내일 시험을 본다", "시험 공부를 해야 한다", "시험 성적이 올랐다", "시험 때문에 잠을 못 잤다"],
}


def themed(per_theme: int, seed: int = 0) -> tuple[list[str], np.ndarray, list[str]]:
    """Documents about three themes (sizes 3:2:1 x per_theme), embeddings clustered by theme, and each
    document's theme; shuffled."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(THEMES), 32))
    docs, rows, truth = [], [], []
    for k, (theme, sentences) in enumerate(THEMES.items()):
        for i in range((3 - k) * per_theme):
            docs.append(sentences[i % len(sentences)])
            rows.append(centres[k] + 0.05 * rng.normal(size=32))
            truth.append(theme)
    order = rng.permutation(len(docs))
    return [docs[i] for i in order], np.asarray(rows)[order].astype(np.float32), [truth[i] for i in order]


def test_topics_recover_the_themes() -> None:
    docs, vectors, truth = themed(10)
    model = find_topics(None, docs, min_topic_size=5, reduction="none", embeddings=vectors)
    assert [t.id for t in model.topics] == [0, 1, 2]  # numbered by size, no outliers
    assert [t.size for t in model.topics] == [30, 20, 10]
    for topic, theme in zip(model.topics, THEMES, strict=True):
        assert topic.words[0][0] == theme
        assert topic.label.startswith(f"{topic.id}_{theme}")
        assert {truth[i] for i in np.flatnonzero(model.assignments == topic.id)} == {theme}
        assert len(topic.representative_docs) == 3
        assert all(model.assignments[i] == topic.id for i in topic.representative_docs)
    assert model.coordinates.shape == (len(docs), 2)
    assert model.reduction == "none" and model.n_outliers == 0


def test_outliers_are_topic_minus_one() -> None:
    docs, vectors, _ = themed(10)
    stray = np.random.default_rng(5).normal(size=(3, 32)).astype(np.float32) * 5
    strays = ["stray words", "more stray words", "stray again"]
    model = find_topics(
        None, [*docs, *strays], min_topic_size=5, reduction="none", embeddings=np.vstack([vectors, stray])
    )
    assert model.topics[0].id == -1
    assert (model.assignments[-3:] == -1).sum() >= 2  # HDBSCAN may still attach one to a cluster
    assert model.n_outliers == model.topics[0].size
    assert "stray" in dict(model.topic(-1).words)
    assert model.topic(-1).representative_docs == []


def test_same_input_same_topics() -> None:
    docs, vectors, _ = themed(8)
    first = find_topics(None, docs, min_topic_size=5, reduction="pca", embeddings=vectors, seed=3)
    second = find_topics(None, docs, min_topic_size=5, reduction="pca", embeddings=vectors, seed=3)
    np.testing.assert_array_equal(first.assignments, second.assignments)
    assert [t.to_dict() for t in first.topics] == [t.to_dict() for t in second.topics]
    assert first.reduction == "pca" and len(first.topics) >= 2


def test_repeated_rows_share_one_place() -> None:
    x = np.array([[1, 0], [0, 1], [1, 0], [2, 2], [0, 1]], dtype=np.float32)
    distinct, back = topics_module._distinct_rows(x)
    assert distinct.tolist() == [0, 1, 3]  # first occurrences, in input order
    np.testing.assert_array_equal(x[distinct][back], x)
    same, identity = topics_module._distinct_rows(x[distinct])
    assert same.tolist() == [0, 1, 2] and identity.tolist() == [0, 1, 2]  # no repeats: input unchanged


def test_bad_input() -> None:
    docs, vectors, _ = themed(4)
    with pytest.raises(ValueError, match="unknown reduction"):
        find_topics(None, docs, reduction="tsne", embeddings=vectors)
    with pytest.raises(ValueError, match="one row per document"):
        find_topics(None, docs[:-1], embeddings=vectors)
    with pytest.raises(ValueError, match="min_cluster_size"):
        find_topics(None, docs, min_topic_size=1000, reduction="none", embeddings=vectors)
    with pytest.raises(KeyError):
        find_topics(None, docs, min_topic_size=5, reduction="none", embeddings=vectors).topic(7)


@pytest.mark.slow
@pytest.mark.skipif(not umap_available(), reason="umap-learn is not installed")
def test_umap_topics_on_real_encodings(encoder) -> None:
    docs = [s for sentences in THEMES.values() for s in sentences] * 6  # repeats: UMAP alone varies
    first = find_topics(encoder, docs, min_topic_size=5, reduction="umap", seed=0)
    second = find_topics(encoder, docs, min_topic_size=5, reduction="umap", seed=0)
    assert first.reduction == "umap" and first.projection == "umap"
    np.testing.assert_array_equal(first.assignments, second.assignments)
    np.testing.assert_allclose(first.coordinates, second.coordinates)
    tops = {t.words[0][0] for t in first.topics if t.id >= 0}
    assert tops & set(THEMES)
