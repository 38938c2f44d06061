"""One automatic choice for every kind of output: the same `choose` measures vectors by cosine and
scores by their agreement, keeps each metric's bar, and caches each in its own file, in the format
older versions wrote (a cross-encoder's file without a machine record still reads)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from munjang.encoders.cross.score_autotune import MAX_ERROR, SCORES, ScoreTrial
from munjang.inference import autotune
from munjang.inference.autotune import COSINE, Trial, cache_path, choose, machine_key

CPU = torch.device("cpu")
CONFIGS = [("torch", "fp32"), ("openvino", "fp32"), ("openvino", "bf16")]
SECONDS = {("torch", "fp32"): 1.0, ("openvino", "fp32"): 0.5, ("openvino", "bf16"): 0.1}


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MUNJANG_CACHE", str(tmp_path))
    return tmp_path


def vectors_measure(calls: list[str]):
    """Vectors: openvino fp32 equal to the reference, bf16 (fastest) off the cosine bar."""
    rng = np.random.default_rng(0)
    reference = rng.normal(size=(6, 8))
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    noisy = reference + rng.normal(scale=0.1, size=reference.shape)
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)

    def measure(backend, precision, texts):
        calls.append(f"{backend} {precision}")
        return (noisy if precision == "bf16" else reference), SECONDS[(backend, precision)]

    return measure


def scores_measure(calls: list[str]):
    """Scores: openvino fp32 within the score bar, bf16 (fastest) off by 5% of the spread."""
    reference = np.array([[0.0], [1.0], [-1.0], [2.0], [0.5], [3.0]])
    spread = float(np.std(reference))

    def measure(backend, precision, pairs):
        calls.append(f"{backend} {precision}")
        off = {"fp32": 0.0, "bf16": 0.05 * spread}[precision] if backend == "openvino" else 0.0
        return reference + off, SECONDS[(backend, precision)]

    return measure


def test_one_choose_judges_vectors_by_cosine_and_scores_by_agreement(cache: Path) -> None:
    texts = [f"text {i}" for i in range(6)]
    pairs = [("q", f"d{i}") for i in range(6)]
    calls: list[str] = []
    vectors = choose(vectors_measure(calls), "same-weights", CPU, CONFIGS, texts)
    scores = choose(scores_measure(calls), "same-weights", CPU, CONFIGS, pairs, metric=SCORES)
    for choice, trial_type in ((vectors, Trial), (scores, ScoreTrial)):
        assert (choice.backend, choice.precision) == ("openvino", "fp32"), choice
        assert [type(t) for t in choice.trials] == [trial_type] * 3
        assert [t.accurate for t in choice.trials] == [True, True, False]
        assert not choice.cached
    assert vectors.trials[0].mean_cosine == 1.0 and vectors.trials[1].sentences_per_s == 12.0
    assert scores.trials[0].max_error == 0.0 and scores.trials[2].max_error > MAX_ERROR
    assert vectors.describe()["bar"] == {"mean_cosine": 0.9999, "min_cosine": 0.999}
    assert scores.describe()["bar"] == {"max_error_of_spread": 0.02, "mean_error_of_spread": 0.005}
    assert "not_measured" in vectors.describe() and "not_measured" not in scores.describe()
    # the same fingerprint, two files: neither metric reads the other's choice
    assert len(list((cache / "autotune").glob("*.json"))) == 2
    calls.clear()
    again = choose(scores_measure(calls), "same-weights", CPU, CONFIGS, pairs, metric=SCORES)
    assert again.cached and not calls and isinstance(again.trials[0], ScoreTrial)
    assert autotune.cached_choice("same-weights", CPU, CONFIGS).trials[1].sentences_per_s == 12.0


def test_cached_files_keep_their_paths_and_format(cache: Path) -> None:
    """A cross-encoder's choice as the separate score autotune wrote it (no machine record) reads;
    both metrics write their file where they did, in the same keys."""
    machine = {**machine_key(CPU), "scores": 1}
    path = cache_path("cross-encoder:old", machine)
    path.parent.mkdir(parents=True)
    old = {
        "configs": [list(c) for c in CONFIGS],
        "backend": "openvino",
        "precision": "fp32",
        "trials": [
            {
                "backend": b,
                "precision": p,
                "max_error": 0.0,
                "mean_error": 0.0,
                "pairs_per_s": 1.0,
                "error": None,
            }
            for b, p in CONFIGS
        ],
        "measured_at": "2026-01-01T00:00:00Z",
        "cached": False,
    }
    path.write_text(json.dumps(old), encoding="utf-8")
    found = choose(lambda *a: pytest.fail("measured although cached"), "old", CPU, CONFIGS, metric=SCORES)
    assert found.cached and (found.backend, found.precision) == ("openvino", "fp32")
    calls: list[str] = []
    choose(vectors_measure(calls), "encoder", CPU, CONFIGS, ["a"] * 6)
    written = json.loads(cache_path("encoder", machine_key(CPU)).read_text(encoding="utf-8"))
    assert list(written) == ["configs", "backend", "precision", "trials", "machine", "measured_at", "cached"]
    assert set(written["trials"][0]) == {
        "backend",
        "precision",
        "mean_cosine",
        "min_cosine",
        "sentences_per_s",
        "error",
    }


def test_each_metric_brings_its_own_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autotune, "runtime_available", lambda backend: False)
    assert COSINE.candidates(CPU) == autotune.candidates(CPU)
    assert SCORES.candidates(torch.device("meta")) == [("torch", "fp32")]
    one = choose(
        lambda *a: pytest.fail("measured one candidate"), "x", CPU, [("torch", "fp32")], metric=SCORES
    )
    assert (one.backend, one.precision, one.trials) == ("torch", "fp32", [])
