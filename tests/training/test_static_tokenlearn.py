"""tokenlearn_static: a static model distilled from MiniLM, fine-tuned on MiniLM's own sentence vectors,
follows them better on held-out texts, trains only the tokens its corpus holds, leaves its source
untouched, and refuses what it cannot train."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

import munjang
from munjang.encoders.dense.encoder import SentenceEncoder
from munjang.modules import Normalize, StaticEmbedding
from munjang.training import StaticFit, distill_static, tokenlearn_static
from munjang.training.static_tokenlearn import teacher_vectors

SUBJECTS = ["A man", "The woman", "A child", "Two dogs", "The old teacher", "A young girl"]
VERBS = ["is playing", "is eating", "watches", "is painting", "likes"]
OBJECTS = ["a guitar", "an apple", "the football game", "a red house", "the piano"]
TEXTS = [f"{s} {v} {o}." for s, v, o in itertools.product(SUBJECTS, VERBS, OBJECTS)]  # 150 texts


@pytest.fixture(scope="module")
def distilled(encoder: SentenceEncoder) -> SentenceEncoder:
    return distill_static(encoder, dim=32, max_vocab=8000, show_progress_bar=False)


@pytest.fixture(scope="module")
def targets(encoder: SentenceEncoder) -> np.ndarray:
    return teacher_vectors(encoder, TEXTS, show_progress_bar=False)


@pytest.fixture(scope="module")
def fit(distilled: SentenceEncoder, targets: np.ndarray) -> StaticFit:
    return tokenlearn_static(
        distilled, TEXTS, targets=targets, batch_size=16, eval_steps=4, max_epochs=15, show_progress_bar=False
    )


def table(model: SentenceEncoder) -> torch.Tensor:
    static = model[0]
    assert isinstance(static, StaticEmbedding)
    return static.embedding.weight.detach()


def test_held_out_loss_falls(fit: StaticFit) -> None:
    start = fit.validation_loss[0][1]
    best = min(loss for _, loss in fit.validation_loss)
    assert best < 0.7 * start
    assert dict(fit.validation_loss)[fit.best_step] == best
    assert fit.train_texts + fit.validation_texts == len(TEXTS) and fit.validation_texts == 15
    assert fit.steps > 0 and 0 < fit.explained_variance <= 1


def test_only_the_corpus_tokens_are_trained(fit: StaticFit, distilled: SentenceEncoder) -> None:
    # the source keeps its rows (it was fitted first): a trained row differs from it
    before, after = table(distilled), table(fit.model)
    tokenizer = distilled[0].tokenizer
    seen = sorted({i for e in tokenizer.encode_batch(TEXTS, add_special_tokens=False) for i in e.ids})
    trainable = [i for i in seen if before[i].norm() > 0]
    assert fit.trained_tokens == len(trainable)
    changed = (before != after).any(dim=1)
    assert changed[trainable].all()
    assert int(changed.sum()) == len(trainable)  # every other row, zero rows included, is as it was


def test_the_result_is_a_static_model_that_saves_and_loads(
    fit: StaticFit, distilled: SentenceEncoder, tmp_path: Path
) -> None:
    assert isinstance(fit.model[0], StaticEmbedding) and isinstance(fit.model[-1], Normalize)
    assert fit.model.max_seq_length == distilled.max_seq_length
    assert fit.model[0].tokenizer is not distilled[0].tokenizer
    fit.model.save(tmp_path)
    reloaded = munjang.load_encoder(tmp_path, device="cpu")
    np.testing.assert_allclose(reloaded.encode(TEXTS[:5]), fit.model.encode(TEXTS[:5]), atol=1e-6)


def test_the_same_seed_gives_the_same_model(distilled: SentenceEncoder, targets: np.ndarray) -> None:
    options = {"targets": targets, "batch_size": 32, "max_epochs": 2, "show_progress_bar": False}
    runs = [tokenlearn_static(distilled, TEXTS, **options) for _ in range(2)]
    assert torch.equal(table(runs[0].model), table(runs[1].model))


def test_refuses_what_it_cannot_train(
    encoder: SentenceEncoder, distilled: SentenceEncoder, targets: np.ndarray
) -> None:
    with pytest.raises(ValueError, match="the first module must be StaticEmbedding"):
        tokenlearn_static(encoder, TEXTS, targets=targets)
    with pytest.raises(ValueError, match="one vector per text"):
        tokenlearn_static(distilled, TEXTS[:-1], targets=targets)
    with pytest.raises(ValueError, match="give a teacher"):
        tokenlearn_static(distilled, TEXTS)
    with pytest.raises(ValueError, match="at least two texts"):
        tokenlearn_static(distilled, ["", "   "], targets=np.zeros((2, 384), dtype=np.float32))
