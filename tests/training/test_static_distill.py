"""distill_static: a static model distilled from MiniLM (its first few thousand tokens) has the asked
shape, keeps similar sentences closer than unrelated ones, and round-trips through
sentence-transformers' loader with the same vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

import munjang
from munjang.encoders.dense.encoder import SentenceEncoder
from munjang.modules import Normalize, StaticEmbedding
from munjang.training.static_distill import _zipf_weights, distill_static

SENTENCES = [
    "A man is playing a guitar.",
    "A man plays the guitar.",
    "The stock market fell sharply today.",
    "Prices of shares dropped.",
]


@pytest.fixture(scope="module")
def distilled(encoder: SentenceEncoder) -> SentenceEncoder:
    # ids 1996+ are MiniLM's common whole words; 4000 covers the sentences above in a couple of seconds
    return distill_static(encoder, dim=32, max_vocab=4000, show_progress_bar=False)


def test_shape_and_pipeline(distilled: SentenceEncoder, encoder: SentenceEncoder) -> None:
    static = distilled[0]
    assert isinstance(static, StaticEmbedding)
    assert static.embedding.weight.shape == (encoder.tokenizer.vocab_size, 32)
    assert not static.embedding.weight[4000:].any()  # not distilled: zero rows
    assert isinstance(distilled[-1], Normalize) and distilled.get_embedding_dimension() == 32
    assert distilled.max_seq_length == 512


def test_similar_sentences_score_higher(distilled: SentenceEncoder) -> None:
    vectors = distilled.encode(SENTENCES)
    scores = vectors @ vectors.T
    assert scores[0, 1] > scores[0, 2] and scores[0, 1] > scores[0, 3]
    related = (scores[0, 1] + scores[2, 3]) / 2
    assert related > scores[:2, 2:].mean() + 0.05


def test_saved_model_loads_in_sentence_transformers(distilled: SentenceEncoder, tmp_path: Path) -> None:
    distilled.save(tmp_path)
    expected = distilled.encode(SENTENCES)
    np.testing.assert_allclose(
        SentenceTransformer(str(tmp_path), device="cpu").encode(SENTENCES), expected, atol=1e-6, rtol=0
    )
    reloaded = munjang.load_encoder(tmp_path, device="cpu")
    np.testing.assert_allclose(reloaded.encode(SENTENCES), expected, atol=1e-6, rtol=0)


def test_vocabulary_counts_and_no_pca(encoder: SentenceEncoder) -> None:
    model = distill_static(
        encoder,
        vocabulary=["munjang", "the"],  # "the" is a token already: not added again
        pca=False,
        token_counts={"[CLS]": 10, "[SEP]": 5},
        max_vocab=200,
        show_progress_bar=False,
    )
    static = model[0]
    assert isinstance(static, StaticEmbedding)
    assert static.embedding.weight.shape == (encoder.tokenizer.vocab_size + 1, 384)
    assert static.tokenizer.token_to_id("munjang") == encoder.tokenizer.vocab_size
    row = static.embedding.weight[-1].detach().numpy()
    np.testing.assert_allclose(model.encode("munjang"), row / np.linalg.norm(row), atol=1e-6)


def test_zipf_weights_rank_by_count_then_id(encoder: SentenceEncoder) -> None:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(encoder.tokenizer.backend_tokenizer.to_str())
    by_id = _zipf_weights(tokenizer, [0, 1, 2], None)
    np.testing.assert_allclose(by_id, np.log1p([1, 2, 3]), rtol=1e-6)
    by_count = _zipf_weights(tokenizer, [0, 101, 102], {"[CLS]": 10, "[SEP]": 5})  # 101/102 = CLS/SEP
    np.testing.assert_allclose(by_count, np.log1p([3, 1, 2]), rtol=1e-6)
