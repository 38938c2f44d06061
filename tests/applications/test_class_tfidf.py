"""c-TF-IDF: the same weights as BERTopic's ClassTfidfTransformer, and as a whole BERTopic fitted on the
same clusters and tokens; Korean documents counted by their Kiwi nouns."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer

from munjang.applications.class_tfidf import c_tf_idf, class_counts, top_words, topic_tokens
from munjang.applications.topics import topics_from_labels

DOCS = [
    "오늘 날씨가 너무 좋아서 한강 공원에 갔어요",
    "날씨가 추워서 집에 있었다",
    "비가 와서 우산을 샀다",
    "눈이 와서 날씨가 춥다",
    "맛있는 김치찌개를 먹었다",
    "점심으로 비빔밥을 먹었다",
    "저녁에 치킨을 시켜 먹었다",
    "치킨이 먹고 싶다",
    "the weather is nice today",
    "I ate chicken for dinner",
]
LABELS = np.array([0, 0, 0, 0, 1, 1, 1, 1, -1, -1])


def test_korean_tokens_are_nouns_other_text_words() -> None:
    tokens = topic_tokens(DOCS)
    assert tokens[0] == ["오늘", "날씨", "한강", "공원"]
    assert tokens[6] == ["저녁", "치킨"]
    assert tokens[8] == ["weather", "nice", "today"]  # English stop words ("the", "is") dropped


def test_formula_by_hand() -> None:
    counts = np.array([[2, 0, 1], [0, 3, 1]], dtype=float)
    average = int(counts.sum(axis=1).mean())  # 3
    idf = np.log(average / counts.sum(axis=0) + 1)
    expected = counts / counts.sum(axis=1, keepdims=True) * idf
    np.testing.assert_allclose(c_tf_idf(counts).toarray(), expected)


def test_matches_bertopics_transformer() -> None:
    ctfidf = pytest.importorskip("bertopic.vectorizers").ClassTfidfTransformer
    rng = np.random.default_rng(0)
    dense = rng.poisson(0.7, size=(6, 40)).astype(float)
    dense[:, 0] = 1.0  # no empty column
    counts = sparse.csr_matrix(dense)
    theirs = ctfidf().fit_transform(counts.copy())
    np.testing.assert_allclose(c_tf_idf(counts).toarray(), theirs.toarray(), rtol=1e-12)


def test_matches_bertopic_on_the_same_clusters() -> None:
    bertopic = pytest.importorskip("bertopic")
    from bertopic.dimensionality import BaseDimensionalityReduction

    class FixedClusters:
        """An HDBSCAN stand-in that returns the given labels."""

        def fit(self, x: np.ndarray, y: object = None) -> FixedClusters:
            self.labels_ = LABELS
            return self

        def predict(self, x: np.ndarray) -> np.ndarray:
            return LABELS

    tokens = topic_tokens(DOCS)
    vectors = np.random.default_rng(0).normal(size=(len(DOCS), 8)).astype(np.float32)
    model = bertopic.BERTopic(
        umap_model=BaseDimensionalityReduction(),
        hdbscan_model=FixedClusters(),
        vectorizer_model=CountVectorizer(analyzer=str.split),
        language="multilingual",  # "english" would strip every non-ASCII character first
        top_n_words=30,
    )
    model.fit([" ".join(t) for t in tokens], embeddings=vectors)
    _, vocabulary, counts = class_counts(tokens, LABELS)
    assert list(model.vectorizer_model.get_feature_names_out()) == vocabulary
    np.testing.assert_allclose(c_tf_idf(counts).toarray(), model.c_tf_idf_.toarray(), rtol=1e-12)
    for topic in topics_from_labels(vectors, tokens, LABELS, n_words=30):
        theirs = {w: s for w, s in model.get_topic(topic.id) if w}
        assert dict(topic.words) == pytest.approx(theirs, rel=1e-12)
        assert topic.size == int((topic.id == LABELS).sum())
    assert topics_from_labels(vectors, tokens, LABELS)[2].words[0][0] == "치킨"


def test_top_words_heaviest_first() -> None:
    weights = sparse.csr_matrix(np.array([[0.1, 0.5, 0.0, 0.3]]))
    assert top_words(weights, ["a", "b", "c", "d"], 2) == [[("b", 0.5), ("d", 0.3)]]
    assert top_words(weights, ["a", "b", "c", "d"], 10)[0][-1] == ("a", 0.1)  # zero weights left out


def test_labels_must_match_documents() -> None:
    with pytest.raises(ValueError, match="labels"):
        class_counts([["a"], ["b"]], [0])
