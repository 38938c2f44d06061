"""TSDAE's loss against sentence-transformers' DenoisingAutoEncoderLoss (the reference).

A tiny random BERT is saved with its masked-LM head (as `BertForMaskedLM` writes it), so both
libraries build the decoder's LM head from the checkpoint; only the decoder's cross-attention is new
in each, and ours is given the reference's. The same damaged / original batch then goes through both
in float64: the loss values and the gradient of every encoder and decoder parameter must agree
within 1e-5.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig

try:  # sentence-transformers >= 6 moved the module; older releases only have the second path
    from sentence_transformers.sentence_transformer.losses import DenoisingAutoEncoderLoss as STDenoising
except ImportError:  # pragma: no cover
    from sentence_transformers.losses import DenoisingAutoEncoderLoss as STDenoising

import munjang
from munjang.data.denoising import delete_words
from munjang.losses import DenoisingAutoEncoderLoss
from munjang.models.hub import embedded_default_path

TOLERANCE = 1e-5

SENTENCES = [
    "한 남자가 기타를 치고 있다.",
    "A man is playing a guitar on the stage tonight.",
    "오늘은 날씨가 맑고 따뜻해서 공원에 산책을 나온 사람들이 많았다.",
    "고양이",
    "The quick brown fox jumps over the lazy dog near the river bank.",
]


@pytest.fixture(scope="module")
def mlm_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A seeded 2-layer, 32-dim BERT saved with its masked-LM head, dropout off."""
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
    with torch.no_grad():  # a head that differs from a fresh one, so loading it is visible
        model.cls.predictions.transform.dense.weight.normal_(0, 0.5)
        model.cls.predictions.bias.uniform_(-1, 1)
    folder = tmp_path_factory.mktemp("tiny-bert-mlm")
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def test_loss_and_gradients_match_sentence_transformers(mlm_checkpoint: Path) -> None:
    ours_model = munjang.load_encoder(mlm_checkpoint, device="cpu")
    ref_model = SentenceTransformer(str(mlm_checkpoint), device="cpu")
    ours = DenoisingAutoEncoderLoss(ours_model)
    ref = STDenoising(ref_model, tie_encoder_decoder=True)
    assert "cls.predictions.transform.dense.weight" in ours.head_weights
    ours_head = ours.decoder.cls.predictions.transform.dense.weight
    assert torch.equal(ours_head, ref.decoder.cls.predictions.transform.dense.weight)
    cross = {k: v for k, v in ref.decoder.state_dict().items() if "crossattention" in k}
    assert cross
    ours.decoder.load_state_dict(cross, strict=False)
    ours.double().eval()
    ref.double().eval()

    rng = np.random.default_rng(0)
    damaged = [delete_words(s, 0.6, rng) for s in SENTENCES]
    columns = [damaged, SENTENCES]
    ours_value = ours([ours_model.tokenize(c) for c in columns], None)
    preprocess = getattr(ref_model, "preprocess", None) or ref_model.tokenize
    ref_value = ref([preprocess(c) for c in columns], None)
    assert ours_value.item() > 0
    assert abs(ours_value.item() - ref_value.item()) <= TOLERANCE, (ours_value.item(), ref_value.item())
    ours_value.backward()
    ref_value.backward()

    ref_params = dict(ref.decoder.named_parameters())
    compared = 0
    for name, param in ours.decoder.named_parameters():
        other = ref_params[name]
        assert param.grad is not None and other.grad is not None, name
        diff = (param.grad - other.grad).abs().max().item()
        assert diff <= TOLERANCE, f"{name}: gradients differ by {diff}"
        compared += 1
    assert compared >= 30  # embeddings, both layers with their cross-attention, the head


def test_decoder_shares_the_encoders_weights(mlm_checkpoint: Path) -> None:
    model = munjang.load_encoder(mlm_checkpoint, device="cpu")
    loss = DenoisingAutoEncoderLoss(model)
    backbone = model.transformer.auto_model
    assert loss.decoder.bert.encoder.layer[0].attention.self.query.weight is (
        backbone.encoder.layer[0].attention.self.query.weight
    )
    embeddings = backbone.embeddings.word_embeddings.weight
    assert loss.decoder.get_output_embeddings().weight is embeddings
    untied = DenoisingAutoEncoderLoss(
        munjang.load_encoder(mlm_checkpoint, device="cpu"), tie_encoder_decoder=False
    )
    assert untied.decoder.get_output_embeddings().weight is not embeddings
    assert torch.equal(untied.decoder.get_output_embeddings().weight, embeddings)


def test_rejects_embeddings_only_use(mlm_checkpoint: Path) -> None:
    loss = DenoisingAutoEncoderLoss(munjang.load_encoder(mlm_checkpoint, device="cpu"))
    with pytest.raises(ValueError, match="token ids"):
        loss.compute_from_embeddings([torch.zeros(2, 32), torch.zeros(2, 32)], None)
    with pytest.raises(ValueError, match="2 text columns"):
        loss([loss.model.tokenize(["a"])], None)
