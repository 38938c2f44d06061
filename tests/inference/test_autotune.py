"""The automatic backend: never a configuration that fails the fp32 bar, cached per model and machine,
clean fallbacks where a runtime is missing or fails, exact fp32 on request and while training."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import munjang
from munjang.encoders.dense.backend_selection import default_configuration, normalized
from munjang.inference import autotune
from munjang.inference.autotune import MEAN_COSINE, MIN_COSINE, Trial, measure_all, pick
from munjang.inference.calibration import calibration_texts
from tests.helpers.cli import run_cli
from tests.helpers.training import tiny_bert


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return tiny_bert(tmp_path_factory.mktemp("tiny") / "bert", dropout=0.0)


@pytest.fixture(scope="module")
def auto_tiny(auto_cache, tiny_folder):
    """A 2-layer BERT on every candidate this machine has (the real model is in a slow test)."""
    return munjang.load_encoder(tiny_folder, device="cpu")


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


def test_load_encoder_defaults_to_auto(auto_tiny):
    assert (auto_tiny.backend_name, auto_tiny.precision) == ("auto", "auto")


def assert_choice_meets_the_bar(encoder: munjang.SentenceEncoder) -> None:
    """The default path's vectors against torch fp32 on the calibration set, measured here; the
    choice is the fastest accurate trial, and every trial marked accurate is."""
    choice = encoder.auto_choice()
    texts = calibration_texts()
    exact = encoder.encode(texts, backend="torch", precision="fp32")
    chosen = encoder.encode(texts)  # the default path, as a user calls it
    assert encoder.configuration() == (choice.backend, choice.precision)
    cos = cosines(chosen, exact)
    assert cos.mean() >= MEAN_COSINE and cos.min() >= MIN_COSINE, (choice.backend, choice.precision)
    assert (choice.trials[0].backend, choice.trials[0].precision) == ("torch", "fp32")
    fastest = max((t for t in choice.trials if t.accurate), key=lambda t: t.sentences_per_s or 0)
    assert (choice.backend, choice.precision) == (fastest.backend, fastest.precision)
    for trial in choice.trials:
        if trial.accurate:
            c = cosines(encoder.encode(texts, backend=trial.backend, precision=trial.precision), exact)
            assert c.mean() >= MEAN_COSINE and c.min() >= MIN_COSINE, trial


def test_the_choice_meets_the_fp32_bar_on_the_calibration_set(auto_tiny):
    assert_choice_meets_the_bar(auto_tiny)
    assert len(auto_tiny.auto_choice().trials) == len(autotune.candidates(torch.device("cpu")))


def test_int8_is_never_a_candidate_but_stays_on_request(auto_tiny, monkeypatch):
    """int8 fails the fp32 bar on every model measured, and its calibration would dominate a first
    use: auto never builds it, while precision="int8" still runs it."""
    monkeypatch.setattr(autotune, "runtime_available", lambda backend: True)
    monkeypatch.setattr(autotune, "cpu_has_fast_bf16", lambda: True)
    found = autotune.candidates(torch.device("cpu"))
    assert found[0] == ("torch", "fp32")
    assert {b for b, _ in found} == {"torch", "openvino", "onnx"}
    assert all(p != "int8" for _, p in found), found
    assert ("openvino", "bf16") in found and ("torch", "bf16") in found
    assert not any(t.precision == "int8" for t in auto_tiny.auto_choice().trials)
    assert auto_tiny.configuration("onnx", "int8") == ("onnx", "int8")
    texts = ["A man is playing a guitar.", "서울의 날씨가 맑다."]
    vectors = auto_tiny.encode(texts, backend="onnx", precision="int8")
    exact = auto_tiny.encode(texts, backend="torch", precision="fp32")
    assert cosines(vectors, exact).min() > 0.9


def test_only_the_chosen_backend_stays_loaded(auto_cache, tiny_folder, tmp_path, monkeypatch):
    monkeypatch.setenv("MUNJANG_CACHE", str(tmp_path))  # nothing cached: every candidate is measured
    encoder = munjang.load_encoder(tiny_folder, device="cpu")
    earlier = encoder.backend("onnx", "fp32")  # built by the caller before the choice: kept
    choice = encoder.auto_choice()
    assert not choice.cached and len([t for t in choice.trials if t.error is None]) > 2
    loaded = {(key[0], key[1]) for key in encoder._backends}
    assert loaded <= {("onnx", "fp32"), (choice.backend, choice.precision)}, loaded
    assert encoder.backend("onnx", "fp32") is earlier


@pytest.mark.slow
def test_the_choice_meets_the_fp32_bar_on_minilm(auto_cache, minilm_path):
    assert_choice_meets_the_bar(munjang.load_encoder(minilm_path, device="cpu"))


def test_the_choice_is_cached_for_the_next_process(auto_tiny, tiny_folder, monkeypatch):
    first = auto_tiny.auto_choice()

    def no_measuring(*args, **kwargs):
        raise AssertionError("measured again although the choice was cached")

    monkeypatch.setattr(autotune, "measure_all", no_measuring)
    again = munjang.load_encoder(tiny_folder, device="cpu")
    choice = again.auto_choice()
    assert choice.cached and (choice.backend, choice.precision) == (first.backend, first.precision)
    info = again.info()
    assert (info["backend"], info["precision"]) == (first.backend, first.precision)
    assert info["chosen_by"]["chosen_by"] == "auto (read from the cache)"


def test_precision_alone_runs_exact_torch(auto_tiny):
    assert auto_tiny.configuration(precision="fp32") == ("torch", "fp32")
    exact = munjang.load_encoder(auto_tiny.model_folder, precision="fp32")
    assert (exact.backend_name, exact.precision) == ("auto", "fp32")
    assert exact.configuration() == ("torch", "fp32")
    texts = ["A man is playing a guitar.", "서울의 날씨가 맑다."]
    reference = auto_tiny.encode(texts, backend="torch", precision="fp32")
    np.testing.assert_array_equal(exact.encode(texts), reference)


def test_missing_runtimes_fall_back_to_torch(auto_cache, tmp_path, monkeypatch):
    monkeypatch.setattr(autotune, "runtime_available", lambda backend: backend == "torch")
    encoder = munjang.load_encoder(tiny_bert(tmp_path / "bert", seed=1), device="cpu")
    choice = encoder.auto_choice()
    configs = autotune.candidates(torch.device("cpu"))
    assert {backend for backend, _ in configs} == {"torch"}
    # Torch's precisions are measured where the CPU has bf16 instructions; one candidate needs no trial.
    assert {t.backend for t in choice.trials} == ({"torch"} if len(configs) > 1 else set())
    assert choice.backend == "torch"
    assert encoder.encode(["a small test"]).shape == (1, 32)


def test_a_failing_or_inaccurate_candidate_is_never_chosen():
    texts = [f"text {i}" for i in range(8)]
    rng = np.random.default_rng(0)
    reference = rng.normal(size=(8, 16)).astype(np.float32)
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    noisy = reference + rng.normal(scale=0.2, size=reference.shape).astype(np.float32)
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    seconds = {
        ("torch", "fp32"): 1.0,
        ("fast", "inaccurate"): 0.01,
        ("fast", "broken"): 0.01,
        ("ok", "x"): 0.5,
    }

    def measure(backend, precision, batch):
        if backend == "fast" and precision == "broken":
            raise RuntimeError("cannot export")
        vectors = noisy if precision == "inaccurate" else reference
        return vectors, seconds[(backend, precision)]

    trials = measure_all(measure, list(seconds), texts)
    by_name = {(t.backend, t.precision): t for t in trials}
    assert by_name[("fast", "broken")].error.startswith("RuntimeError")
    assert not by_name[("fast", "inaccurate")].accurate
    assert by_name[("fast", "inaccurate")].sentences_per_s is None
    best = pick(trials)
    assert (best.backend, best.precision) == ("ok", "x")
    assert pick([Trial("torch", "fp32", 1.0, 1.0, None)]).backend == "torch"  # nothing timed: the reference


def test_training_switches_auto_to_exact_torch(auto_cache, tmp_path, monkeypatch):
    encoder = munjang.load_encoder(tiny_bert(tmp_path / "bert", dropout=0.0, seed=2), device="cpu")
    optimizer = torch.optim.SGD(encoder.parameters(), lr=0.1)
    features = encoder.tokenize(["one sentence", "another one"])
    encoder.train()
    encoder(features)["sentence_embedding"].sum().backward()
    optimizer.step()
    monkeypatch.setattr(autotune, "choose", lambda *a, **k: pytest.fail("measured a model in training"))
    assert encoder.configuration() == ("torch", "fp32")
    assert encoder.info()["chosen_by"].startswith("auto: torch fp32 while the weights are trained")
    exact = encoder.encode(["one sentence"], backend="torch", precision="fp32")
    np.testing.assert_array_equal(encoder.encode(["one sentence"]), exact)


def test_the_process_default_and_the_explicit_forms(monkeypatch):
    monkeypatch.delenv("MUNJANG_ENCODE_BACKEND", raising=False)
    assert default_configuration() == ("auto", "auto")
    monkeypatch.setenv("MUNJANG_ENCODE_BACKEND", "openvino:bf16")
    assert default_configuration() == ("openvino", "bf16")
    monkeypatch.setenv("MUNJANG_ENCODE_BACKEND", "torch")
    assert default_configuration() == ("torch", "fp32")
    assert normalized("onnx", None) == ("onnx", "fp32")
    assert normalized(None, "bf16") == ("auto", "bf16")
    with pytest.raises(ValueError, match="unknown backend 'tensorrt'"):
        normalized("tensorrt", None)
    monkeypatch.setenv("MUNJANG_ENCODE_BACKEND", "postgresql://db/search")
    with pytest.raises(ValueError, match="MUNJANG_ENCODE_BACKEND='postgresql://db/search': unknown backend"):
        default_configuration()


def test_munjang_info_says_what_auto_chose(auto_tiny, tiny_folder, capsys, monkeypatch):
    choice = auto_tiny.auto_choice()
    code, out, err = run_cli(["info", str(tiny_folder), "--json"], capsys, monkeypatch)
    assert code == 0, err
    details = json.loads(out)
    assert (details["backend"], details["precision"]) == (choice.backend, choice.precision)
    assert details["chosen_by"]["chosen_by"] == "auto (read from the cache)"
    assert details["chosen_by"]["trials"][0]["backend"] == "torch"
    assert details["chosen_by"]["not_measured"].startswith("int8: not a candidate")
    code, out, err = run_cli(["info", str(tiny_folder)], capsys, monkeypatch)
    assert code == 0 and f"{choice.backend} {choice.precision}" in out and "cosine mean" in out
    assert "int8: not a candidate" in out and "precision int8 runs it" in out
