"""The automatic choice's measurement says how far it is and about how long it has left."""

from __future__ import annotations

import logging

import numpy as np

from munjang.inference.autotune import ROUNDS, measure_all


def test_each_candidate_logs_its_place_and_an_estimate(caplog):
    vectors = np.eye(4, dtype=np.float32)
    configs = [("torch", "fp32"), ("torch", "bf16"), ("openvino", "fp32"), ("onnx", "fp32")]

    def measure(backend, precision, texts):
        return vectors, 1.0  # one pass: a second

    with caplog.at_level(logging.WARNING, logger="munjang.inference.autotune"):
        measure_all(measure, configs, ["a", "b", "c", "d"])
    lines = [r.getMessage() for r in caplog.records if "candidate" in r.getMessage()]
    assert [line.split(",")[0] for line in lines] == [
        "autotune: candidate 2 of 4",
        "autotune: candidate 3 of 4",
        "autotune: candidate 4 of 4",
    ]
    # the timed rounds still ahead: ROUNDS passes per candidate at the reference's pace
    assert lines[0].endswith(f"about {ROUNDS * len(configs)} s left")
