"""The automatic backend of a cross-encoder: the fastest (backend, precision) whose scores keep torch
fp32's, measured once per model and machine (`backend="auto"`).

The encoders' automatic choice (`inference/autotune.py`) compares vectors by cosine; a reranker's output
is a score, so here a candidate is accurate when its raw scores (logits, log-odds) on bundled Korean and
English (query, passage) pairs differ from torch fp32's by at most `MAX_ERROR` of the reference scores'
spread (their standard deviation) for every pair and `MEAN_ERROR` on average: a change that small
cannot reorder pairs whose scores are apart by more than a few hundredths of the spread. Candidates:
torch fp32 (the reference, always accurate), OpenVINO fp32, and OpenVINO bf16 where the CPU has bf16
instructions. torch bf16 is not one: it would cast the live module, which is also what trains. The
accurate candidate with the highest throughput (best of `ROUNDS` interleaved rounds) is chosen.

The machine key, the cache folder and the lock are the encoders' (`autotune.machine_key`,
`cache_path`); the fingerprint names a cross-encoder's scores, so the two never read each other's file.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from filelock import FileLock

from ..._util.atomic import atomic_write
from ...inference.autotune import CONTENDER, ROUNDS, cache_path, machine_key, runtime_available
from ...inference.calibration import calibration_texts
from ...inference.hardware import cpu_has_fast_bf16

logger = logging.getLogger(__name__)

MAX_ERROR = 0.02
MEAN_ERROR = 0.005
PAIRS = 16
SCORE_AUTOTUNE_FORMAT = 1

Pair = tuple[str, str]
# Scores `pairs` on (backend, precision): (raw scores, seconds).
Measure = Callable[[str, str, Sequence[Pair]], tuple[np.ndarray, float]]


@dataclass
class ScoreTrial:
    """One candidate's measurement: its largest and mean score error as a share of the reference spread."""

    backend: str
    precision: str
    max_error: float | None = None
    mean_error: float | None = None
    pairs_per_s: float | None = None
    error: str | None = None

    @property
    def accurate(self) -> bool:
        return (
            self.error is None
            and self.max_error is not None
            and self.mean_error is not None
            and self.max_error <= MAX_ERROR
            and self.mean_error <= MEAN_ERROR
        )


@dataclass
class ScoreChoice:
    """What `predict` runs on under backend "auto", and the measurements behind it."""

    backend: str
    precision: str
    trials: list[ScoreTrial] = field(default_factory=list)
    measured_at: str = ""
    cached: bool = False

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "precision": self.precision,
            "chosen_by": "auto (read from the cache)" if self.cached else "auto (measured)",
            "measured_at": self.measured_at,
            "bar": {"max_error_of_spread": MAX_ERROR, "mean_error_of_spread": MEAN_ERROR},
            "trials": [asdict(t) for t in self.trials],
        }


def candidates(device: torch.device) -> list[tuple[str, str]]:
    """torch fp32 first (the reference), then OpenVINO fp32 and, with bf16 instructions, bf16 (CPU only)."""
    if device.type != "cpu" or not runtime_available("openvino"):
        return [("torch", "fp32")]
    return [("torch", "fp32"), ("openvino", "fp32"), *([("openvino", "bf16")] if cpu_has_fast_bf16() else [])]


def calibration_pairs(count: int = PAIRS) -> list[Pair]:
    """(short query, passage) pairs from the bundled calibration texts, in a fixed order."""
    texts = calibration_texts()
    short = sorted(texts[: len(texts) // 3], key=len)[: max(count // 2, 1)]
    long = texts[len(texts) // 2 :]
    return [(short[i % len(short)], long[(7 * i) % len(long)]) for i in range(count)]


def measure_all(
    measure: Measure, configs: Sequence[tuple[str, str]], pairs: Sequence[Pair]
) -> list[ScoreTrial]:
    """Errors of every configuration against the first, then the throughput of the accurate ones."""
    reference, _ = measure(*configs[0], pairs)
    spread = max(float(np.std(reference)), 1e-6)
    trials = [ScoreTrial(*configs[0], max_error=0.0, mean_error=0.0)]
    for backend, precision in configs[1:]:
        trial = ScoreTrial(backend, precision)
        try:
            scores, _ = measure(backend, precision, pairs)  # also builds and warms the graph
        except Exception as e:  # a runtime that cannot convert or run this model is skipped, not fatal
            trial.error = f"{type(e).__name__}: {e}"[:300]
            logger.info("score autotune: %s %s cannot run here: %s", backend, precision, trial.error)
        else:
            error = np.abs(scores - reference) / spread
            trial.max_error, trial.mean_error = round(float(error.max()), 6), round(float(error.mean()), 6)
        trials.append(trial)
    best: dict[int, float] = {}
    for round_ in range(ROUNDS):
        fastest = min(best.values(), default=0.0)
        for i, trial in enumerate(trials):
            if not trial.accurate or (round_ and best[i] > fastest / CONTENDER):
                continue
            _, seconds = measure(trial.backend, trial.precision, pairs)
            best[i] = min(best.get(i, float("inf")), seconds)
    for i, seconds in best.items():
        trials[i].pairs_per_s = round(len(pairs) / max(seconds, 1e-9), 2)
    return trials


def pick(trials: Sequence[ScoreTrial]) -> ScoreTrial:
    """The accurate trial with the highest throughput (the reference, first, wins ties)."""
    accurate = [t for t in trials if t.accurate and t.pairs_per_s is not None]
    return max(accurate, key=lambda t: t.pairs_per_s or 0.0) if accurate else trials[0]


def choose(
    measure: Measure,
    fingerprint: str | None,
    device: torch.device,
    configs: Sequence[tuple[str, str]] | None = None,
    pairs: Sequence[Pair] | None = None,
) -> ScoreChoice:
    """The cached choice for this cross-encoder (`fingerprint`; None: never cached) and machine, or a
    new measurement, cached; processes that start together measure once (a file lock)."""
    configs = list(configs or candidates(device))
    if len(configs) == 1:
        return ScoreChoice(*configs[0])
    if fingerprint is None:
        return _measured(measure, configs, pairs)
    machine = {**machine_key(device), "scores": SCORE_AUTOTUNE_FORMAT}
    path = cache_path(f"cross-encoder:{fingerprint}", machine)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=1800):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if [tuple(c) for c in data["configs"]] == [tuple(c) for c in configs]:
                trials = [ScoreTrial(**t) for t in data["trials"]]
                return ScoreChoice(data["backend"], data["precision"], trials, data["measured_at"], True)
        except (OSError, ValueError, KeyError, TypeError):
            pass
        choice = _measured(measure, configs, pairs)
        text = json.dumps({"configs": configs, **asdict(choice), "cached": False}, indent=2)
        atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        return choice


def _measured(measure: Measure, configs: list[tuple[str, str]], pairs: Sequence[Pair] | None) -> ScoreChoice:
    logger.warning(
        "choosing the fastest accurate backend for this cross-encoder on this machine (once; cached): %s",
        ", ".join(f"{b} {p}" for b, p in configs),
    )
    trials = measure_all(measure, configs, list(pairs or calibration_pairs()))
    best = pick(trials)
    logger.warning("chose %s %s (%s pairs/s)", best.backend, best.precision, best.pairs_per_s)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return ScoreChoice(best.backend, best.precision, trials, stamp)
