"""Static int8 on the exported MiniLM graph: which MatMuls stay float, that the rest really run on
calibrated int8, that OpenVINO's int8 uses it and stays near fp32, and the fallback without NNCF."""

from __future__ import annotations

import importlib
import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest

import munjang
from munjang.inference import BackendError, openvino_backend, static_int8
from munjang.inference.artifacts import manifest_path
from munjang.inference.onnx_export import onnx_artifact

onnx = pytest.importorskip("onnx")
pytest.importorskip("openvino")
pytest.importorskip("nncf")

ENGLISH = [
    "A man is playing a guitar on the stage.",
    "Stocks fell sharply on Monday after the central bank raised interest rates by half a point.",
    "Two dogs run across the snowy field while the children watch from the porch.",
    "How do I reset my password?",
    "The committee postponed its decision on the new budget until next month.",
    "A woman is slicing an onion in a small kitchen.",
    "Heavy rain is expected across the south coast this weekend.",
    "Hi",
]


@pytest.fixture(scope="module", autouse=True)
def cache(isolated_cache: Path) -> Path:
    return isolated_cache


@pytest.fixture(scope="module")
def encoder():
    return munjang.load_encoder(None, device="cpu")


@pytest.fixture(scope="module")
def static_graph(encoder) -> Path:
    return onnx_artifact(encoder.transformer, None, "int8-static")


def test_attention_and_down_projections_stay_float(encoder):
    model = onnx.load(str(onnx_artifact(encoder.transformer, None, "fp32")))
    kept = static_int8.float_matmuls(model)
    attention = [n for n in kept if re.search(r"attention/self/MatMul(_1)?$", n)]
    down = [n for n in kept if re.search(r"layer\.\d+/output/dense/MatMul$", n)]
    assert len(attention) == 2 * 6 and len(down) == 6 and len(kept) == 18, kept


@pytest.mark.slow  # calibrating the static graph takes 20 s; int8 is never a default
def test_the_other_matmuls_run_on_calibrated_int8(encoder, static_graph):
    model = onnx.load(str(static_graph))
    producers = {out: node for node in model.graph.node for out in node.output}
    kept = set(static_int8.float_matmuls(onnx.load(str(onnx_artifact(encoder.transformer, None, "fp32")))))
    matmuls = [n for n in model.graph.node if n.op_type == "MatMul"]
    assert len(matmuls) == 8 * 6  # query, key, value, scores, context, output, FFN in, FFN out
    for node in matmuls:
        fed = producers.get(node.input[0])
        dequantized = fed is not None and fed.op_type == "DequantizeLinear"
        assert dequantized == (node.name not in kept), node.name
    manifest = json.loads(manifest_path(static_graph).read_text(encoding="utf-8"))
    assert manifest["recipe"] == static_int8.RECIPE
    assert manifest["quantization"]["int8_matmuls"] == 30 and manifest["quantization"]["float_matmuls"] == 18
    assert manifest["quantization"]["calibration_texts"] > 200


@pytest.mark.slow  # calibrating the static graph takes 20 s; int8 is never a default
def test_openvino_int8_is_the_static_graph_and_near_fp32(encoder, static_graph):
    backend = encoder.backend("openvino", "int8")
    assert backend.variant == "int8-static" and backend.model_path == static_graph
    reference = encoder.encode(ENGLISH, backend="torch", precision="fp32")
    got = encoder.encode(ENGLISH, backend="openvino", precision="int8")
    cosine = (got * reference).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(reference, axis=1)
    assert cosine.mean() >= 0.998 and cosine.min() >= 0.99, cosine
    assert np.abs(got - reference).max() > 1e-4  # it really ran quantized


def test_without_nncf_int8_falls_back_to_int8_weights_with_a_warning(encoder, monkeypatch, caplog):
    monkeypatch.setattr(openvino_backend, "find_spec", lambda name: None)
    openvino_backend._warn_no_nncf.cache_clear()
    with caplog.at_level(logging.WARNING, logger="munjang.inference.openvino_backend"):
        backend = openvino_backend.OpenVinoBackend(encoder.transformer, precision="int8")
    assert backend.variant == "int8-weights" and backend.model_path.name == "munjang-int8-weights.onnx"
    assert "pip install 'munjang[int8]'" in caplog.text


def test_missing_nncf_names_the_extra(monkeypatch):
    real = importlib.import_module

    def import_module(name: str, *args, **kwargs):
        if name == "nncf":
            raise ImportError("No module named 'nncf'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", import_module)
    expected = "static int8 (openvino int8) needs nncf: pip install 'munjang[int8]'"
    with pytest.raises(BackendError, match=re.escape(expected)):
        static_int8.nncf_module()
