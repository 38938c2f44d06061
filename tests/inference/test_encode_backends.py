"""Every backend through `SentenceEncoder.encode`, against torch fp32 on a small input: the
cosine thresholds each precision must keep (fp32 backends: equal to rounding)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import munjang
from munjang.inference import BackendError
from munjang.inference.backends import resolve_backend
from munjang.inference.hardware import cpu_has_fast_bf16

TEXTS = [
    "A man is playing a guitar.",
    "Two dogs run across the snowy field while children watch.",
    "서울의 날씨가 오늘은 맑고 따뜻합니다.",
    "The committee postponed its decision on the new budget until next month.",
    "고양이가 소파 위에서 잠을 잔다.",
    "Stocks fell sharply.",
]

# backend, precision, max abs difference (fp32) or (mean cosine, min cosine)
CASES = [
    ("torch", "fp32", 1e-5, None),
    ("torch", "bf16", None, (0.9995, 0.999)),
    ("onnx", "fp32", 1e-4, None),
    ("onnx", "int8", None, (0.985, 0.96)),
    ("openvino", "fp32", 1e-4, None),
    ("openvino", "bf16", None, (0.9995, 0.999)),
    # OpenVINO int8 calibrates a static graph (24 s); int8 is never a default: under -m slow.
    pytest.param("openvino", "int8", None, (0.998, 0.995), marks=pytest.mark.slow),
]


@pytest.fixture(scope="module")
def isolated_encoder(tmp_path_factory, minilm_path):
    patch = pytest.MonkeyPatch()
    patch.setenv("MUNJANG_CACHE", str(tmp_path_factory.mktemp("artifacts")))
    yield munjang.load_encoder(minilm_path, device="cpu")
    patch.undo()


@pytest.mark.parametrize("backend,precision,max_diff,cosines", CASES)
def test_backend_agrees_with_torch_fp32(isolated_encoder, backend, precision, max_diff, cosines):
    if backend == "openvino":
        pytest.importorskip("openvino")
        if precision == "bf16" and not cpu_has_fast_bf16():
            with pytest.raises(BackendError, match="bf16 instructions"):
                isolated_encoder.encode(TEXTS, backend=backend, precision=precision)
            return
    enc = isolated_encoder
    reference = enc.encode(TEXTS, backend="torch", precision="fp32")
    got = enc.encode(TEXTS, backend=backend, precision=precision)
    assert got.shape == reference.shape and got.dtype == np.float32
    single = enc.encode(TEXTS[0], backend=backend, precision=precision)
    if precision == "int8":  # activations are quantized per batch, so a lone sentence differs a little
        assert single @ got[0] / np.linalg.norm(single) / np.linalg.norm(got[0]) > 0.98
    else:
        np.testing.assert_allclose(single, got[0], atol=1e-4)
    if max_diff is not None:
        assert np.abs(got - reference).max() <= max_diff
    else:
        cos = (got * reference).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(reference, axis=1)
        assert cos.mean() >= cosines[0] and cos.min() >= cosines[1]
        assert np.abs(got - reference).max() > 1e-6  # it really ran at lower precision
    tokens = enc.encode(TEXTS[:2], backend=backend, precision=precision, output_value="token_embeddings")
    assert [t.shape for t in tokens] == [
        t.shape for t in enc.encode(TEXTS[:2], output_value="token_embeddings")
    ]


def test_default_backend_set_per_model(isolated_encoder, minilm_path):
    enc = munjang.load_encoder(minilm_path, device="cpu", backend="onnx", precision="fp32")
    assert (enc.backend_name, enc.precision) == ("onnx", "fp32")
    assert enc.backend().name == "onnx"
    np.testing.assert_allclose(enc.encode(TEXTS), isolated_encoder.encode(TEXTS), atol=1e-4)


def test_auto_precision_is_the_fastest_at_fp32_accuracy():
    cpu = torch.device("cpu")
    fast = "bf16" if cpu_has_fast_bf16() else "fp32"
    assert resolve_backend("torch", "auto", cpu) == ("torch", fast)
    assert resolve_backend("openvino", "auto", cpu) == ("openvino", fast)
    assert resolve_backend("onnx", "auto", cpu) == ("onnx", "fp32")
    with pytest.raises(ValueError, match="offers precision fp32, int8"):
        resolve_backend("onnx", "bf16", cpu)
    with pytest.raises(ValueError, match="runs on the CPU"):
        resolve_backend("openvino", "auto", torch.device("cuda"))
