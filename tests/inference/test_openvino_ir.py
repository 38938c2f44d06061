"""OpenVINO compiles the IR converted once from the ONNX artefact (weights mapped, not copied), and an
encoder running on it by default frees torch's copy of the weights before compiling, reading them back
whenever anything needs them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import munjang
from munjang.inference.artifacts import manifest_path
from munjang.inference.openvino_ir import ir_paths
from tests.helpers.training import tiny_bert

pytest.importorskip("openvino")

TEXTS = ["첫 문장을 인코딩한다.", "The weather is nice today.", "a longer sentence " * 12]


def held(encoder: munjang.SentenceEncoder) -> int:
    return sum(p.numel() for p in encoder.transformer.auto_model.parameters())


def test_openvino_default_frees_torch_weights_and_reads_them_back(isolated_cache, tmp_path):
    folder = tiny_bert(tmp_path / "bert", dropout=0.0)
    exact = munjang.load_encoder(folder, backend="torch", precision="fp32").encode(TEXTS)
    encoder = munjang.load_encoder(folder, backend="openvino", precision="fp32")
    vectors = encoder.encode(TEXTS)
    np.testing.assert_allclose(vectors, exact, atol=1e-5)
    assert held(encoder) == 0  # compiled without torch's copy resident
    backend = encoder.backend()
    xml, weights = ir_paths(backend.model_path)
    assert backend.ir_path == xml and weights.stat().st_size > 0 and manifest_path(xml).exists()
    assert encoder.info()["parameters"] > 0 and encoder.device == torch.device("cpu")
    assert held(encoder) == 0  # describing the model reads nothing back
    np.testing.assert_array_equal(encoder.encode(TEXTS), vectors)
    assert sum(p.numel() for p in encoder.parameters()) > 0  # e.g. an optimizer: read back, exactly
    np.testing.assert_array_equal(encoder.encode(TEXTS, backend="torch", precision="fp32"), exact)


def test_saving_a_freed_model_writes_its_weights(isolated_cache, tmp_path):
    folder = tiny_bert(tmp_path / "bert", dropout=0.0)
    encoder = munjang.load_encoder(folder, backend="openvino", precision="fp32")
    encoder.encode(TEXTS)
    assert held(encoder) == 0
    encoder.save(tmp_path / "copy")
    again = munjang.load_encoder(tmp_path / "copy", backend="torch", precision="fp32")
    exact = munjang.load_encoder(folder, backend="torch", precision="fp32")
    np.testing.assert_array_equal(again.encode(TEXTS), exact.encode(TEXTS))


def test_weights_changed_in_memory_are_never_freed(isolated_cache, tmp_path):
    encoder = munjang.load_encoder(tiny_bert(tmp_path / "bert", dropout=0.0), backend="openvino")
    with torch.no_grad():
        encoder.transformer.auto_model.embeddings.word_embeddings.weight.mul_(1.5)
    encoder.encode(TEXTS)
    assert held(encoder) > 0  # the folder no longer holds them: they stay
    assert not encoder.release_torch_weights()


def test_a_damaged_ir_weights_file_is_converted_again(isolated_cache, tmp_path):
    folder = tiny_bert(tmp_path / "bert", dropout=0.0)
    first = munjang.load_encoder(folder, backend="openvino", precision="fp32")
    expected = first.encode(TEXTS)
    _, weights = ir_paths(first.backend().model_path)
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    second = munjang.load_encoder(folder, backend="openvino", precision="fp32")
    np.testing.assert_array_equal(second.encode(TEXTS), expected)
