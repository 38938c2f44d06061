"""LLM rerankers (a causal LM's yes / no log-odds): parity with sentence-transformers 6 both ways,
chat template, prompts, truncation, the fast two-row head, training, errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import CrossEncoder as STCrossEncoder
from sentence_transformers.cross_encoder import losses as st_losses

from munjang import load_cross_encoder
from munjang.encoders.cross.losses import BinaryCrossEntropyLoss
from munjang.errors import ModelLoadError
from munjang.modules.causal_lm import CausalLMTransformer
from munjang.modules.logit_score import LogitScore
from tests.helpers.llm import tiny_llm_reranker

PAIRS = [
    ("한 남자가 기타를 친다.", "남자가 악기를 연주한다."),
    ("서울은 어디에 있나?", "서울은 한국의 수도이다. 부산은 항구 도시이다. " * 3),
    ("cat", "A man is playing a guitar."),
    ("", "빈 질의"),
    ("아이들이 공원에서 뛰어논다.", ""),
]
INSTRUCTION = "Judge whether the document answers the query. Answer yes or no."
RAW = torch.nn.Identity()

logging.getLogger("sentence_transformers").setLevel(logging.ERROR)


@pytest.fixture(scope="module", params=["chat", "plain"])
def reranker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp(request.param) / "reranker"
    return tiny_llm_reranker(folder, chat=request.param == "chat", prompts={"web": INSTRUCTION})


def _st(path: Path) -> STCrossEncoder:
    return STCrossEncoder(str(path), device="cpu")


@pytest.mark.parametrize("prompt", [None, INSTRUCTION])
def test_scores_equal_sentence_transformers(reranker: Path, prompt: str | None) -> None:
    ours = load_cross_encoder(reranker, device="cpu")
    assert ours.head == "causal-lm" and ours.num_labels == 1
    assert isinstance(ours[0], CausalLMTransformer) and isinstance(ours[-1], LogitScore)
    theirs = _st(reranker)
    logits = ours.predict(PAIRS, prompt=prompt, activation=RAW, batch_size=2)
    expected = theirs.predict(PAIRS, prompt=prompt, activation_fn=RAW, batch_size=2)
    np.testing.assert_allclose(logits, expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(
        ours.predict(PAIRS, prompt=prompt), theirs.predict(PAIRS, prompt=prompt), atol=1e-6
    )
    ranked = ours.rank("기타 치는 사람", [d for _, d in PAIRS], prompt=prompt)
    their_rank = theirs.rank("기타 치는 사람", [d for _, d in PAIRS], prompt=prompt)
    assert [h["corpus_id"] for h in ranked] == [h["corpus_id"] for h in their_rank]


def test_prompt_names_and_truncation_equal_sentence_transformers(reranker: Path) -> None:
    ours = load_cross_encoder(reranker, device="cpu")
    theirs = _st(reranker)
    assert ours.prompts == {"web": INSTRUCTION}
    a = ours.predict(PAIRS, prompt_name="web", activation=RAW)
    np.testing.assert_allclose(a, theirs.predict(PAIRS, prompt_name="web", activation_fn=RAW), atol=1e-5)
    assert not np.allclose(a, ours.predict(PAIRS, activation=RAW), atol=1e-4)  # the instruction is read
    ours.max_seq_length = theirs.max_seq_length = 24  # the long pair is cut; the template's tail stays
    np.testing.assert_allclose(
        ours.predict(PAIRS, activation=RAW), theirs.predict(PAIRS, activation_fn=RAW), atol=1e-5
    )


def test_two_head_rows_equal_the_whole_vocabulary(reranker: Path) -> None:
    ours = load_cross_encoder(reranker, device="cpu")
    fast = ours.predict(PAIRS, activation=RAW)
    ours[0].score_token_ids = None  # full next-token logits, as sentence-transformers computes them
    np.testing.assert_allclose(ours.predict(PAIRS, activation=RAW), fast, atol=1e-6)


def test_sentence_transformers_loads_what_we_save(reranker: Path, tmp_path: Path) -> None:
    ours = load_cross_encoder(reranker, device="cpu")
    ours.save(tmp_path / "saved")
    config = json.loads((tmp_path / "saved" / "sentence_bert_config.json").read_text())
    assert config["transformer_task"] == "text-generation"
    theirs = _st(tmp_path / "saved")
    for prompt in (None, INSTRUCTION):
        np.testing.assert_allclose(
            ours.predict(PAIRS, prompt=prompt, activation=RAW),
            theirs.predict(PAIRS, prompt=prompt, activation_fn=RAW),
            atol=1e-5,
        )
    again = load_cross_encoder(tmp_path / "saved", device="cpu")
    assert again.prompts == ours.prompts and again[0].use_chat_template == ours[0].use_chat_template
    np.testing.assert_allclose(again.predict(PAIRS), ours.predict(PAIRS), atol=1e-7)


def test_bf16_keeps_the_order_of_clearly_separated_scores(reranker: Path) -> None:
    fp32 = load_cross_encoder(reranker, device="cpu").predict(PAIRS, activation=RAW)
    bf16 = load_cross_encoder(reranker, device="cpu", dtype=torch.bfloat16).predict(PAIRS, activation=RAW)
    assert bf16.dtype == np.float32 and np.all(np.isfinite(bf16))
    np.testing.assert_allclose(bf16, fp32, atol=0.05)


def test_bce_on_log_odds_equals_sentence_transformers(reranker: Path) -> None:
    ours = load_cross_encoder(reranker, device="cpu")
    theirs = _st(reranker)
    firsts, seconds = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    labels = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.3])
    ours.train()
    loss = BinaryCrossEntropyLoss(ours)(ours.training_features([firsts, seconds]), labels)
    loss.backward()
    theirs.train()
    their_loss = st_losses.BinaryCrossEntropyLoss(theirs)([firsts, seconds], labels)
    their_loss.backward()
    assert abs(loss.item() - their_loss.item()) < 1e-5
    ours_grad = ours[0].auto_model.model.layers[0].self_attn.q_proj.weight.grad
    their_grad = theirs[0].auto_model.model.layers[0].self_attn.q_proj.weight.grad
    torch.testing.assert_close(ours_grad, their_grad, atol=1e-5, rtol=1e-4)
    head = ours[0].auto_model.lm_head.weight.grad  # only the yes / no rows learn
    assert head is not None and int((head.abs().sum(dim=1) > 0).sum()) == 2


def test_broken_folders_name_the_problem(reranker: Path, tmp_path: Path) -> None:
    ours = load_cross_encoder(reranker, device="cpu")
    ours.save(tmp_path / "m")
    (tmp_path / "m" / "1_LogitScore" / "config.json").write_text('{"false_token_id": 3}')
    with pytest.raises(ModelLoadError, match="true_token_id"):
        load_cross_encoder(tmp_path / "m", device="cpu")
    ours.save(tmp_path / "n")
    settings = tmp_path / "n" / "sentence_bert_config.json"
    config = json.loads(settings.read_text())
    config["processing_kwargs"] = ["add_generation_prompt"]
    settings.write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="processing_kwargs"):
        load_cross_encoder(tmp_path / "n", device="cpu")
    with pytest.raises(ValueError, match="no prompt named 'nope'"):
        ours.predict(PAIRS[:1], prompt_name="nope")


def test_openvino_fp32_equals_torch(tmp_path: Path) -> None:
    model = load_cross_encoder(tiny_llm_reranker(tmp_path / "rr"), device="cpu", backend="openvino")
    exact = load_cross_encoder(tmp_path / "rr", device="cpu").predict(PAIRS, activation=RAW)
    np.testing.assert_allclose(model.predict(PAIRS, activation=RAW), exact, atol=1e-4)


@pytest.mark.slow
def test_openvino_scores_equal_torch_and_follow_weight_changes(reranker: Path) -> None:
    model = load_cross_encoder(reranker, device="cpu")
    exact = model.predict(PAIRS, activation=RAW)
    model.set_backend("openvino", "fp32")
    np.testing.assert_allclose(model.predict(PAIRS, activation=RAW), exact, atol=1e-4)
    model.set_backend("torch")  # reads back the weights the compiled graph let go
    with torch.no_grad():  # an edit of the weights rebuilds the graph
        model[0].auto_model.lm_head.weight[model[-1].true_token_id] += 0.5
    edited = model.predict(PAIRS, activation=RAW)
    assert not np.allclose(edited, exact, atol=1e-3)
    model.set_backend("openvino", "bf16")
    np.testing.assert_allclose(model.predict(PAIRS, activation=RAW), edited, atol=0.1)
    with pytest.raises(ValueError, match="backend must be one of"):
        model.set_backend("onnx")


def test_the_environment_chooses_an_llm_rerankers_backend(reranker: Path, monkeypatch) -> None:
    monkeypatch.setenv("MUNJANG_RERANK_BACKEND", "openvino:bf16")
    model = load_cross_encoder(reranker, device="cpu")
    assert (model.backend, model.precision) == ("openvino", "bf16")
    assert load_cross_encoder(reranker, device="cpu", backend="torch").backend == "torch"
