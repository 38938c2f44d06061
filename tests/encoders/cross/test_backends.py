"""Where a cross-encoder's predict runs: OpenVINO graphs of BERT-style cross-encoders (both heads) and
LLM rerankers equal torch; torch's weights are released once a graph is compiled and read back for
training and saving; "auto" keeps the fastest candidate within the score bar and caches its choice."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from munjang import load_cross_encoder
from munjang.encoders.cross import score_autotune
from munjang.encoders.cross.losses import BinaryCrossEntropyLoss
from munjang.encoders.cross.score_autotune import SCORES, ScoreTrial
from munjang.inference.autotune import measure_all, pick
from tests.helpers.llm import tiny_llm_reranker
from tests.helpers.training import tiny_bert

pytestmark = pytest.mark.usefixtures("isolated_cache")

PAIRS = [
    ("한 남자가 기타를 친다.", "남자가 악기를 연주한다."),
    ("cat", "A man is playing a guitar."),
    ("서울은 어디에 있나?", "서울은 한국의 수도이다. " * 6),
    ("아이들이 공원에서 뛰어논다.", ""),
]
RAW = torch.nn.Identity()


@pytest.fixture(scope="module", params=["native", "seeds", "llm"])
def folder(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp(request.param)
    if request.param == "llm":
        return tiny_llm_reranker(tmp / "reranker")
    model = load_cross_encoder(tiny_bert(tmp / "bert", dropout=0.0), head=request.param, device="cpu")
    model.save(tmp / "cross")
    return tmp / "cross"


def _transformer_weights(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model[0].auto_model.parameters())  # type: ignore[index]


def test_openvino_equals_torch_and_releases_torch_weights(folder: Path, tmp_path: Path) -> None:
    model = load_cross_encoder(folder, device="cpu")
    exact = model.predict(PAIRS, activation=RAW)
    weights = _transformer_weights(model)
    model.set_backend("openvino", "fp32")
    np.testing.assert_allclose(model.predict(PAIRS, activation=RAW), exact, atol=1e-4)
    assert _transformer_weights(model) == 0  # the compiled graph holds its own copy
    np.testing.assert_allclose(model.predict(PAIRS[::-1], activation=RAW), exact[::-1], atol=1e-4)
    model.save(tmp_path / "saved")  # reads them back first
    assert _transformer_weights(model) == weights
    again = load_cross_encoder(tmp_path / "saved", device="cpu")
    np.testing.assert_allclose(again.predict(PAIRS, activation=RAW), exact, atol=1e-6)
    model.set_backend("torch")
    np.testing.assert_allclose(model.predict(PAIRS, activation=RAW), exact, atol=1e-6)


def test_a_new_head_keeps_torch_weights(tmp_path: Path) -> None:
    """A head initialised at load time is in no folder: its weights stay, and the graph still scores."""
    model = load_cross_encoder(tiny_bert(tmp_path / "bert", dropout=0.0), head="native", device="cpu")
    exact = model.predict(PAIRS, activation=RAW)
    model.set_backend("openvino")
    np.testing.assert_allclose(model.predict(PAIRS, activation=RAW), exact, atol=1e-4)
    assert _transformer_weights(model) > 0 and not model.release_torch_weights()


def test_training_reads_released_weights_back_and_the_graph_follows(folder: Path) -> None:
    model = load_cross_encoder(folder, device="cpu", backend="openvino")
    before = model.predict(PAIRS, activation=RAW)
    assert _transformer_weights(model) == 0
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    firsts, seconds = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    BinaryCrossEntropyLoss(model)(model.training_features([firsts, seconds]), torch.ones(4)).backward()
    optimizer.step()
    after = model.predict(PAIRS, activation=RAW)  # the graph is rebuilt on the trained weights
    assert not np.allclose(after, before, atol=1e-3)
    model.set_backend("torch")
    np.testing.assert_allclose(model.predict(PAIRS, activation=RAW), after, atol=1e-4)


def test_auto_measures_once_keeps_the_bar_and_caches(folder: Path) -> None:
    model = load_cross_encoder(folder, device="cpu", backend="auto")
    exact = load_cross_encoder(folder, device="cpu").predict(PAIRS, activation=RAW)
    np.testing.assert_allclose(model.predict(PAIRS, activation=RAW), exact, atol=1e-3)
    info = model.backend_info()
    trials = {(t["backend"], t["precision"]): t for t in info["chosen_by"]["trials"]}
    assert info["chosen_by"]["chosen_by"] == "auto (measured)"
    assert set(trials) == set(score_autotune.candidates(torch.device("cpu")))
    chosen = trials[(info["backend"], info["precision"])]
    assert chosen["max_error"] <= score_autotune.MAX_ERROR and chosen["pairs_per_s"] > 0
    bar = score_autotune.MAX_ERROR, score_autotune.MEAN_ERROR
    within = [t for t in trials.values() if t["max_error"] is not None and t["max_error"] <= bar[0]]
    fastest = max(t["pairs_per_s"] or 0 for t in within if t["mean_error"] <= bar[1])
    assert chosen["pairs_per_s"] == fastest
    if info["backend"] == "openvino":  # kept while the candidates were measured, released after
        assert _transformer_weights(model) == 0
    second = load_cross_encoder(folder, device="cpu", backend="auto")
    assert second.backend_info()["chosen_by"]["chosen_by"] == "auto (read from the cache)"


def test_auto_runs_torch_once_trained(folder: Path) -> None:
    model = load_cross_encoder(folder, device="cpu", backend="auto")
    model.predict(PAIRS[:1])
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    firsts, seconds = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    BinaryCrossEntropyLoss(model)(model.training_features([firsts, seconds]), torch.ones(4)).backward()
    optimizer.step()
    assert model.configuration() == ("torch", "fp32")
    assert "trained" in model.backend_info()["chosen_by"]


def test_the_pick_keeps_the_fastest_within_the_bar() -> None:
    reference = np.array([0.0, 1.0, -1.0, 2.0, 0.5])
    spread = float(np.std(reference))
    results = {  # (backend, precision) -> (scores, seconds)
        ("torch", "fp32"): (reference, 4.0),
        ("openvino", "fp32"): (reference + np.array([0, 0, 0.015 * spread, 0, 0]), 2.0),  # within the bar, 2x
        ("openvino", "bf16"): (reference + 0.05 * spread, 0.5),  # fastest, but off by 5% of the spread
    }
    trials = measure_all(lambda b, p, pairs: results[(b, p)], list(results), [("q", "d")] * 5, SCORES)
    assert [t.accurate for t in trials] == [True, True, False]
    assert trials[2].pairs_per_s is None and abs(trials[2].max_error - 0.05) < 1e-6  # type: ignore[operator]
    assert pick(trials).backend == "openvino" and pick(trials).precision == "fp32"
    failed = [ScoreTrial("torch", "fp32", 0.0, 0.0, 1.0), ScoreTrial("openvino", "fp32", error="no")]
    assert pick(failed).backend == "torch"


def test_backend_errors_name_the_problem(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = load_cross_encoder(folder, device="cpu")
    with pytest.raises(ValueError, match="backend must be one of"):
        model.set_backend("onnx")
    with pytest.raises(ValueError, match="fp32 or bf16"):
        model.set_backend("openvino", "int8")
    monkeypatch.setenv("MUNJANG_RERANK_BACKEND", "openvino:bf16")
    chosen = load_cross_encoder(folder, device="cpu")
    assert (chosen.backend, chosen.precision) == ("openvino", "bf16")
