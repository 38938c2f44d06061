"""Keywords: the same ranking as KeyBERT (similarity, MMR, Max Sum) on the same candidates and the same
embeddings, English candidates found as KeyBERT finds them, Korean candidates handed to both."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer

from munjang.applications import extract_keywords, korean_candidates
from munjang.applications.keywords import Keyword, rank_keywords

keybert = pytest.importorskip("keybert")

ENGLISH = [
    "Supervised learning is the machine learning task of learning a function that maps an input to an "
    "output based on example input-output pairs. It infers a function from labeled training data.",
    "The city council approved a new budget for public transport, adding bus lines and extending the "
    "subway to the airport before the summer holidays.",
    "A man is playing a guitar on the street while children dance around him.",
]
METHODS = [("similarity", {}), ("mmr", {"use_mmr": True}), ("maxsum", {"use_maxsum": True})]


class CachedEncoder:
    """A munjang encoder whose vectors are kept per text, so the parity tests encode each text once and
    KeyBERT and munjang see exactly the same vectors."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.cache: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.encoder.encode(missing, **kwargs), strict=True))
        return np.stack([self.cache[t] for t in texts])


class MunjangBackend(keybert.backend.BaseEmbedder):  # type: ignore[misc]
    """KeyBERT's embedding backend over a munjang encoder: both sides see the same vectors."""

    def __init__(self, encoder: Any) -> None:
        super().__init__()
        self.encoder = encoder

    def embed(self, documents: list[str], verbose: bool = False) -> np.ndarray:
        return self.encoder.encode(list(documents))


@pytest.fixture(scope="module")
def cached(encoder) -> CachedEncoder:
    return CachedEncoder(encoder)


def best_first(keywords: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return sorted(keywords, key=lambda k: -k[1])


def assert_same(ours: list[Keyword], theirs: list[tuple[str, float]]) -> None:
    assert [k.phrase for k in ours] == [k for k, _ in best_first(theirs)]
    np.testing.assert_allclose([k.score for k in ours], [s for _, s in best_first(theirs)], atol=6e-5)


@pytest.fixture(scope="module")
def korean_docs(data_dir: Path) -> list[str]:
    with open(data_dir / "korsts" / "sts-test.tsv", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    news = [r[5] for r in rows if r[0] == "main-news"][:20]
    return [s for s in news if len(korean_candidates(s)) >= 6][:4]


@pytest.mark.parametrize(("method", "flags"), METHODS)
def test_english_matches_keybert(cached, method: str, flags: dict[str, bool]) -> None:
    model = keybert.KeyBERT(model=MunjangBackend(cached))
    theirs = model.extract_keywords(
        ENGLISH, keyphrase_ngram_range=(1, 2), top_n=5, diversity=0.7, nr_candidates=12, **flags
    )
    ours = extract_keywords(cached, ENGLISH, top_n=5, method=method, diversity=0.7, nr_candidates=12)
    for mine, reference in zip(ours, theirs, strict=True):
        assert len(mine) == 5
        assert_same(mine, reference)


@pytest.mark.parametrize(("method", "flags"), METHODS)
def test_korean_candidates_rank_as_keybert(cached, korean_docs, method: str, flags: dict[str, bool]) -> None:
    candidates = [korean_candidates(doc) for doc in korean_docs]
    by_doc = dict(zip(korean_docs, candidates, strict=True))
    vectorizer = CountVectorizer(analyzer=lambda doc: by_doc[doc])
    model = keybert.KeyBERT(model=MunjangBackend(cached))
    theirs = model.extract_keywords(korean_docs, vectorizer=vectorizer, top_n=4, diversity=0.5, **flags)
    ours = extract_keywords(cached, korean_docs, top_n=4, method=method, candidates=candidates)
    for mine, reference in zip(ours, theirs, strict=True):
        assert_same(mine, reference)


@pytest.mark.slow
def test_keybert_on_sentence_transformers_agrees(encoder, minilm_path) -> None:
    from sentence_transformers import SentenceTransformer

    model = keybert.KeyBERT(model=SentenceTransformer(str(minilm_path), device="cpu"))
    theirs = model.extract_keywords(ENGLISH, keyphrase_ngram_range=(1, 2), top_n=5)
    ours = extract_keywords(encoder, ENGLISH, top_n=5)
    for mine, reference in zip(ours, theirs, strict=True):
        assert [k.phrase for k in mine] == [k for k, _ in reference]


def test_mmr_diversity_changes_the_choice() -> None:
    rng = np.random.default_rng(0)
    doc = rng.normal(size=16)
    near = doc + 0.1 * rng.normal(size=(4, 16))  # four near-copies of the document
    far = rng.normal(size=(4, 16))
    words = [f"near{i}" for i in range(4)] + [f"far{i}" for i in range(4)]
    vectors = np.vstack([near, far])
    relevant = rank_keywords(doc, vectors, words, top_n=3, method="mmr", diversity=0.0)
    diverse = rank_keywords(doc, vectors, words, top_n=3, method="mmr", diversity=0.9)
    assert all(k.phrase.startswith("near") for k in relevant)
    assert any(k.phrase.startswith("far") for k in diverse)


def test_few_candidates_and_empty_documents(encoder) -> None:
    found = extract_keywords(encoder, ["Kimchi", "", "서울대학교에서"], top_n=5, method="maxsum")
    assert [k.phrase for k in found[0]] == ["kimchi"]
    assert found[1] == []
    assert [k.phrase for k in found[2]] == ["서울대학교"]


def test_bad_arguments(encoder) -> None:
    with pytest.raises(ValueError, match="unknown method"):
        extract_keywords(encoder, ENGLISH, method="tfidf")
    with pytest.raises(ValueError, match="diversity"):
        extract_keywords(encoder, ENGLISH, method="mmr", diversity=1.5)
    with pytest.raises(ValueError, match="nr_candidates"):
        extract_keywords(encoder, ENGLISH, method="maxsum", top_n=5, nr_candidates=3)
    with pytest.raises(TypeError, match="single string"):
        extract_keywords(encoder, "one document")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one list of strings per document"):
        extract_keywords(encoder, ENGLISH, candidates=[["a"], ["b"]])
