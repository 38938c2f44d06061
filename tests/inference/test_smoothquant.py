"""SmoothQuant on the exported MiniLM graph: the float function is unchanged, every input channel's
activation range is balanced against its weights' range, and OpenVINO's int8 graph built with it is
closer to fp32 than without it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import munjang
from munjang.inference import smoothquant
from munjang.inference.artifacts import manifest_path
from munjang.inference.onnx_export import _numpy_batches, onnx_artifact, quantize_int8_weights, run_onnx

onnx = pytest.importorskip("onnx")

TEXTS = [
    "A man is playing a guitar on the stage.",
    "Stocks fell sharply on Monday after the central bank raised interest rates by half a point.",
    "Hi",
    "오늘 날씨가 정말 좋네요.",
    "고양이가 소파 위에서 잠을 자고 있다.",
    "How do I reset my password?",
]


@pytest.fixture(scope="module", autouse=True)
def cache(isolated_cache: Path) -> Path:
    return isolated_cache


@pytest.fixture(scope="module")
def transformer():
    return munjang.load_encoder(None, device="cpu").transformer


@pytest.fixture(scope="module")
def fp32(transformer) -> Path:
    return onnx_artifact(transformer, None, "fp32")


def outputs(path: Path, transformer) -> list[np.ndarray]:
    import torch

    return [
        run_onnx(path, {k: torch.from_numpy(v) for k, v in batch.items()}, threads=2)
        for batch in _numpy_batches(transformer, TEXTS, rows=3)
    ]


def test_smoothing_keeps_the_float_function_and_balances_every_channel(transformer, fp32, tmp_path):
    model = onnx.load(str(fp32))
    groups = smoothquant.weight_matmul_groups(model)
    assert len(groups) == 4 * 6, "MiniLM-L6: QKV, attention output, FFN in, FFN out per layer"
    calibration = _numpy_batches(transformer, smoothquant.calibration_texts())
    before = smoothquant.activation_maxima(model, list(groups), calibration)
    assert smoothquant.smooth(model, calibration) == len(groups)
    assert sum(node.op_type == "Mul" and node.name == "" for node in model.graph.node) >= len(groups)
    smoothed = tmp_path / "smoothed.onnx"
    onnx.save(model, str(smoothed))
    for a, b in zip(outputs(fp32, transformer), outputs(smoothed, transformer), strict=True):
        np.testing.assert_allclose(b, a, atol=2e-4)
    after = smoothquant.activation_maxima(model, [f"{name}_smoothed" for name in groups], calibration)
    # alpha 0.5 balances each input channel: its activation range now equals its weights' range.
    from onnx import numpy_helper

    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for name, nodes in groups.items():
        w_max = np.max([np.abs(weights[n.input[1]]).max(axis=1) for n in nodes], axis=0)
        np.testing.assert_allclose(after[f"{name}_smoothed"], w_max, rtol=1e-3, err_msg=name)
        assert not np.allclose(before[name], w_max, rtol=0.1), "the input was balanced before smoothing?"


def pooled(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    v = (tokens * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_openvino_int8_graph_is_smoothed_and_closer_to_fp32(transformer, fp32, tmp_path):
    ov = pytest.importorskip("openvino")
    path = onnx_artifact(transformer, None, "int8-weights")
    manifest = json.loads(manifest_path(path).read_text(encoding="utf-8"))
    assert manifest["recipe"] == smoothquant.RECIPE
    assert manifest["smoothquant"]["matmul_inputs"] == 24 and manifest["smoothquant"][
        "calibration_sentences"
    ] == len(smoothquant.calibration_texts())
    plain = tmp_path / "plain-int8.onnx"
    assert quantize_int8_weights(transformer, fp32, plain, smooth=False)["smoothquant"] is None

    core = ov.Core()
    batches = _numpy_batches(transformer, TEXTS, rows=3)

    def cosines(graph: Path) -> np.ndarray:
        compiled = core.compile_model(core.read_model(str(graph)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        request = compiled.create_infer_request()
        names = [p.get_any_name() for p in compiled.inputs]
        result = []
        for batch, reference in zip(batches, outputs(fp32, transformer), strict=True):
            tokens = request.infer({n: batch[n] for n in names})[0]
            mask = batch["attention_mask"].astype(np.float32)
            result.append((pooled(tokens, mask) * pooled(reference, mask)).sum(1))
        return np.concatenate(result)

    smooth, unsmoothed = cosines(path), cosines(plain)
    assert smooth.min() >= 0.998, smooth
    assert 1 - smooth.mean() < 1 - unsmoothed.mean(), (smooth.mean(), unsmoothed.mean())
