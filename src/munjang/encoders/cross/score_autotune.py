"""What is particular to a cross-encoder's automatic backend (`backend="auto"`): its candidates, its
calibration pairs and its accuracy metric, `SCORES`. The measurement, the choice and the cache are the
encoders' (`inference/autotune.py`, run with `metric=SCORES`).

The encoders' metric compares vectors by cosine; a reranker's output is a score, so here a candidate is
accurate when its raw scores (logits, log-odds) on bundled Korean and English (query, passage) pairs
differ from torch fp32's by at most `MAX_ERROR` of the reference scores' spread (their standard
deviation) for every pair and `MEAN_ERROR` on average: a change that small cannot reorder pairs whose
scores are apart by more than a few hundredths of the spread. Candidates: torch fp32 (the reference,
always accurate), OpenVINO fp32, and OpenVINO bf16 where the CPU has bf16 instructions. torch bf16 is
not one: it would cast the live module, which is also what trains. The accurate candidate with the
highest throughput (best of `ROUNDS` interleaved rounds) is chosen.

The fingerprint is prefixed "cross-encoder:" and the machine key carries `SCORE_AUTOTUNE_FORMAT`, so a
cross-encoder's cached choice and an encoder's never read each other's file.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...inference.autotune import Metric, runtime_available
from ...inference.calibration import calibration_texts
from ...inference.hardware import cpu_has_fast_bf16

MAX_ERROR = 0.02
MEAN_ERROR = 0.005
PAIRS = 16
SCORE_AUTOTUNE_FORMAT = 1

Pair = tuple[str, str]


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

    @property
    def per_s(self) -> float | None:
        return self.pairs_per_s


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


def score_agreement(scores: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """Largest and mean absolute score difference, as a share of the reference scores' spread."""
    spread = max(float(np.std(reference)), 1e-6)
    error = np.abs(scores - reference) / spread
    return {"max_error": round(float(error.max()), 6), "mean_error": round(float(error.mean()), 6)}


SCORES = Metric(
    trial=ScoreTrial,
    agreement=score_agreement,
    exact={"max_error": 0.0, "mean_error": 0.0},
    bar={"max_error_of_spread": MAX_ERROR, "mean_error_of_spread": MEAN_ERROR},
    rate="pairs_per_s",
    digits=2,
    candidates=lambda device: candidates(device),
    inputs=lambda: calibration_pairs(),
    subject="cross-encoder",
    unit="pairs",
    tag="score autotune",
    fingerprint_prefix="cross-encoder:",
    machine_extra={"scores": SCORE_AUTOTUNE_FORMAT},
)
