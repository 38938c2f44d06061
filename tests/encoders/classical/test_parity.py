"""Parity: munjang's term vectors equal scikit-learn's vectorizers on the same tokens (TF-IDF within
1e-6, counts exactly), and its word2vec word vectors equal gensim's for the same seed and data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from munjang.data import read_sts
from munjang.encoders.classical import TermEncoder, TermOptions, Word2VecEncoder, Word2VecOptions
from munjang.search.index.tokenizers import get_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return get_tokenizer("auto")


@pytest.fixture(scope="module")
def sentences(data_dir: Path) -> tuple[list[str], list[str]]:
    """300 KorSTS train sentences to fit on, 100 dev sentences (with words unseen in training) to encode."""
    train = read_sts(data_dir / "korsts" / "sts-train.tsv.gz")
    dev = read_sts(data_dir / "korsts" / "sts-dev.tsv")
    return train.sentences1[:300], dev.sentences1[:100]


@pytest.fixture(scope="module")
def tokens(tokenizer, sentences) -> tuple[list[list[str]], list[list[str]]]:
    fit, held_out = sentences
    return tokenizer.tokenize_many(fit), tokenizer.tokenize_many(held_out)


def _same_tokens(docs: list[list[str]]) -> list[list[str]]:
    return docs


@pytest.mark.parametrize("smooth_idf", [True, False])
@pytest.mark.parametrize("sublinear_tf", [False, True])
@pytest.mark.parametrize("norm", ["l2", None])
def test_tfidf_equals_scikit_learn(tokenizer, tokens, smooth_idf, sublinear_tf, norm) -> None:
    fit, held_out = tokens
    options = TermOptions(smooth_idf=smooth_idf, sublinear_tf=sublinear_tf, norm=norm)
    ours = TermEncoder.fit_tokens("tfidf", fit, tokenizer, options)
    reference = TfidfVectorizer(
        analyzer=_same_tokens, smooth_idf=smooth_idf, sublinear_tf=sublinear_tf, norm=norm
    ).fit(fit)
    assert ours.terms.vocabulary == list(reference.get_feature_names_out())
    np.testing.assert_allclose(ours.idf, reference.idf_, rtol=0, atol=1e-12)
    for docs in (fit, held_out):
        difference = ours.transform_tokens(docs) - reference.transform(docs)
        assert abs(difference).max() < 1e-6


@pytest.mark.parametrize(("kind", "binary"), [("bow", False), ("onehot", True)])
@pytest.mark.parametrize("min_df", [1, 3])
def test_counts_equal_count_vectorizer(tokenizer, tokens, kind, binary, min_df) -> None:
    fit, held_out = tokens
    ours = TermEncoder.fit_tokens(kind, fit, tokenizer, TermOptions(min_df=min_df))
    reference = CountVectorizer(analyzer=_same_tokens, binary=binary, min_df=min_df).fit(fit)
    assert ours.terms.vocabulary == list(reference.get_feature_names_out())
    for docs in (fit, held_out):
        assert (ours.transform_tokens(docs) != reference.transform(docs)).nnz == 0


def test_max_features_keeps_the_terms_scikit_learn_keeps(tokenizer, tokens) -> None:
    fit, _ = tokens
    ours = TermEncoder.fit_tokens("bow", fit, tokenizer, TermOptions(max_features=50))
    reference = CountVectorizer(analyzer=_same_tokens, max_features=50).fit(fit)
    counts = np.asarray(reference.transform(fit).sum(axis=0)).ravel()
    assert len(ours.terms.vocabulary) == 50
    # Terms tied at the cut may be chosen either way; those above it are the same.
    cut = np.sort(counts)[0]
    kept = {t for t, c in zip(reference.get_feature_names_out(), counts, strict=True) if c > cut}
    assert kept <= set(ours.terms.vocabulary)


def test_text_encoding_is_the_vectorizer_over_the_tokenizer(tokenizer, sentences) -> None:
    """`encode` on raw text is scikit-learn with munjang's tokenizer as its analyzer."""
    fit, held_out = sentences
    ours = TermEncoder.fit("tfidf", fit, "auto")
    reference = TfidfVectorizer(analyzer=tokenizer).fit(fit)
    assert abs(ours.encode(held_out) - reference.transform(held_out)).max() < 1e-6
    assert ours.similarity(ours.encode(held_out[:3]), ours.encode(held_out[:3])).diagonal() == pytest.approx(
        [1.0 if ours.encode(t).nnz else 0.0 for t in held_out[:3]], abs=1e-6
    )


@pytest.mark.parametrize("architecture", ["cbow", "skipgram"])
def test_word2vec_vectors_equal_gensim(tokenizer, tokens, architecture) -> None:
    gensim = pytest.importorskip("gensim")
    fit, _ = tokens
    options = Word2VecOptions(architecture=architecture, vector_size=32, min_count=2, epochs=3, seed=7)
    ours = Word2VecEncoder.fit_tokens(fit, tokenizer, options)
    reference = gensim.models.Word2Vec(sentences=fit, **options.gensim_arguments())
    assert ours.words == list(reference.wv.index_to_key)
    np.testing.assert_array_equal(ours.vectors, reference.wv.vectors)
    other = Word2VecEncoder.fit_tokens(
        fit,
        tokenizer,
        Word2VecOptions(architecture=architecture, vector_size=32, min_count=2, epochs=3, seed=8),
    )
    assert not np.array_equal(ours.vectors, other.vectors)  # the seed is what made them equal


def test_sentence_vectors_are_the_mean_and_the_sif_formula(tokenizer, tokens, sentences) -> None:
    pytest.importorskip("gensim")
    fit, _ = tokens
    text = sentences[0][0]
    words = [
        t
        for t in tokenizer(text)
        if t
        in set(Word2VecEncoder.fit_tokens(fit[:50], tokenizer, Word2VecOptions(min_count=1, epochs=1)).words)
    ]
    mean = Word2VecEncoder.fit_tokens(
        fit[:50], tokenizer, Word2VecOptions(min_count=1, epochs=1, pooling="mean")
    )
    expected = np.mean([mean.word_vector(w) for w in words], axis=0)
    np.testing.assert_allclose(mean.encode(text), expected, rtol=1e-5, atol=1e-6)
    sif = Word2VecEncoder.fit_tokens(
        fit[:50], tokenizer, Word2VecOptions(min_count=1, epochs=1, pooling="sif")
    )
    p = sif.counts / sif.counts.sum()
    weighted = np.mean([1e-3 / (1e-3 + p[sif.index[w]]) * sif.word_vector(w) for w in words], axis=0)
    u = sif.component
    assert u is not None and np.linalg.norm(u) == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(sif.encode(text), weighted - (weighted @ u) * u, rtol=1e-4, atol=1e-6)
    assert np.count_nonzero(sif.encode("zzzz qqqq")) == 0  # no known word: the zero vector
