"""Continued masked-LM pretraining: the 80/10/10 masking, the head read from a checkpoint or tied to
the word embeddings, and the loss against transformers' own BertForMaskedLM on the same masked batch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig

import munjang
from munjang.losses import MaskedLanguageModelingLoss
from munjang.losses.masked_language_modeling import IGNORE, mask_tokens
from munjang.models.hub import embedded_default_path

TEXTS = ["한 남자가 기타를 치고 있다.", "The quick brown fox jumps over the lazy dog.", "고양이가 잔다."]


def _save(folder: Path, with_head: bool) -> Path:
    tokenizer = AutoTokenizer.from_pretrained(str(embedded_default_path()))
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(0)
    model = AutoModelForMaskedLM.from_config(config)
    with torch.no_grad():
        model.cls.predictions.transform.dense.weight.normal_(0, 0.5)
    (model if with_head else model.bert).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def with_head(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _save(tmp_path_factory.mktemp("mlm-head"), with_head=True)


def test_masking_proportions_and_what_is_never_masked() -> None:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(10, 1000, (200, 100), generator=generator)
    ids[:, 0], ids[:, -1] = 1, 2  # special tokens at both ends
    attention = torch.ones_like(ids)
    attention[:50, 60:] = 0  # padding
    masked, labels = mask_tokens(ids, attention, [1, 2], mask_id=5, vocab_size=1000, generator=generator)
    chosen = labels != IGNORE
    eligible = (attention.bool() & (ids > 2)).sum().item()
    assert abs(chosen.sum().item() / eligible - 0.15) < 0.01
    assert not chosen[:, 0].any() and not chosen[:, -1].any() and not chosen[:50, 60:].any()
    assert torch.equal(labels[chosen], ids[chosen])
    assert torch.equal(masked[~chosen], ids[~chosen])
    share_masked = (masked[chosen] == 5).float().mean().item()
    share_kept = (masked[chosen] == ids[chosen]).float().mean().item()
    assert abs(share_masked - 0.8) < 0.02
    assert abs(share_kept - 0.1) < 0.02


def test_at_least_one_token_is_asked_for() -> None:
    ids = torch.tensor([[1, 50, 2]])
    _, labels = mask_tokens(ids, torch.ones_like(ids), [1, 2], 5, 100, probability=1e-9)
    assert (labels != IGNORE).sum().item() == 1 and labels[0, 1].item() == 50


def test_loss_matches_transformers_masked_lm(with_head: Path) -> None:
    model = munjang.load_encoder(with_head, device="cpu")
    loss = MaskedLanguageModelingLoss(model)
    assert "cls.predictions.transform.dense.weight" in loss.head_weights
    model.eval()
    features = model.tokenize(TEXTS)
    torch.manual_seed(3)
    value = loss([features], None)
    torch.manual_seed(3)
    masked, labels = mask_tokens(
        features["input_ids"], features["attention_mask"], loss.special_ids, loss.mask_id, loss.vocab_size
    )
    reference = AutoModelForMaskedLM.from_pretrained(str(with_head)).eval()
    expected = reference(input_ids=masked, attention_mask=features["attention_mask"], labels=labels).loss
    assert value.item() > 0
    assert abs(value.item() - expected.item()) < 1e-5


def test_a_checkpoint_without_head_gets_one_tied_to_the_embeddings(tmp_path: Path) -> None:
    model = munjang.load_encoder(_save(tmp_path / "bare", with_head=False), device="cpu")
    loss = MaskedLanguageModelingLoss(model)
    assert loss.head_weights == []
    assert (
        loss.head.predictions.decoder.weight is model.transformer.auto_model.embeddings.word_embeddings.weight
    )
    with pytest.raises(ValueError, match="mask_probability"):
        MaskedLanguageModelingLoss(model, mask_probability=0)
