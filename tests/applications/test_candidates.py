"""Keyword candidates: Korean noun phrases from Kiwi (particles stripped, spans of the original text),
word n-grams as KeyBERT's CountVectorizer makes them, and the per-document language choice."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from sklearn.feature_extraction.text import CountVectorizer

from munjang.applications.candidates import (
    check_ngram_range,
    extract_candidates,
    hangul_ratio,
    is_korean,
    korean_candidates,
    word_candidates,
)

SENTENCE = "서울대학교에서 자연어처리 연구를 하는 학생들이 새로운 모델을 만들었다."
PARTICLES = ("에서", "를", "을", "이", "가", "은", "는", "에")


def test_particles_are_stripped_from_nouns() -> None:
    found = korean_candidates(SENTENCE)
    assert "서울대학교" in found
    assert "학생들" in found  # the plural suffix (XSN) stays with its noun
    assert "모델" in found
    assert not any(word.endswith(PARTICLES) for c in found for word in c.split())


def test_noun_runs_and_modifiers_make_phrases() -> None:
    found = korean_candidates(SENTENCE)
    assert "자연어처리 연구" in found  # a run of two nouns, spelled as in the text
    assert "새로운 모델" in found  # adjective + noun
    assert "하는 학생들" not in found  # a verb's adnominal form is no modifier
    assert {"조용한 방", "새 책"} <= set(korean_candidates("조용한 방에서 새 책을 읽었다"))


def test_ngram_range_counts_noun_units() -> None:
    unigrams = korean_candidates(SENTENCE, (1, 1))
    bigrams = korean_candidates(SENTENCE, (2, 2))
    assert unigrams and all(" " not in c for c in unigrams)
    assert bigrams and all(c.count(" ") == 1 for c in bigrams)
    assert set(unigrams) | set(bigrams) == set(korean_candidates(SENTENCE, (1, 2)))


def test_stop_words_split_runs() -> None:
    found = korean_candidates(SENTENCE, stop_words=["연구"])
    assert "자연어처리" in found
    assert not any("연구" in c for c in found)


def test_latin_words_inside_korean_text() -> None:
    found = korean_candidates("BERT 모델을 학습했다")
    assert {"BERT", "BERT 모델", "모델"} <= set(found)


def test_korsts_candidates_are_spans_of_the_sentence(data_dir: Path) -> None:
    with open(data_dir / "korsts" / "sts-test.tsv", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:101]
    sentences = [r[5] for r in rows]
    found = [korean_candidates(s) for s in sentences]
    assert sum(1 for f in found if f) >= 0.95 * len(sentences)
    for sentence, candidates in zip(sentences, found, strict=True):
        assert len(candidates) == len(set(candidates))
        for c in candidates:
            assert c in sentence, (c, sentence)


def test_language_is_decided_per_document() -> None:
    assert hangul_ratio("") == 0.0
    assert hangul_ratio("한국어") == 1.0
    assert is_korean("BERT 모델을 학습했다")
    assert not is_korean("I really love kimchi 김치")


def test_word_candidates_are_keyberts_countvectorizer() -> None:
    docs = ["The quick brown fox jumps over the lazy dog.", "A lazy afternoon with a quick nap."]
    vectorizer = CountVectorizer(ngram_range=(1, 2), stop_words="english").fit(docs)
    counts, words = vectorizer.transform(docs), vectorizer.get_feature_names_out()
    expected = [[str(words[j]) for j in counts[i].nonzero()[1]] for i in range(len(docs))]
    assert word_candidates(docs, (1, 2)) == expected


def test_mixed_documents_and_fixed_candidates() -> None:
    docs = ["The quick brown fox jumps over the lazy dog.", "서울대학교에서 공부한다"]
    found = extract_candidates(docs)
    assert found[0] == word_candidates(docs[:1])[0]
    assert found[1] == ["서울대학교", "공부"]
    fixed = extract_candidates(docs, candidates=["brown fox", "서울대학교", "고려대학교", "lazy"])
    assert fixed == [["brown fox", "lazy"], ["서울대학교"]]


def test_bad_ngram_range() -> None:
    assert check_ngram_range((1, 3)) == (1, 3)
    with pytest.raises(ValueError, match="low <= high"):
        korean_candidates(SENTENCE, (2, 1))
    with pytest.raises(ValueError, match="two integers"):
        check_ngram_range("12")  # type: ignore[arg-type]
