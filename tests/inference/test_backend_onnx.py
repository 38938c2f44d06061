"""ONNX Runtime and OpenVINO backends on the embedded MiniLM: outputs against torch, artefact reuse,
repair of corrupt artefacts, and where artefacts are written (never into site-packages)."""

from __future__ import annotations

import json
import logging
import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import munjang
from munjang.inference.artifacts import artifact_dir, file_sha256, manifest_path, model_fingerprint
from munjang.inference.base import BackendError, TokenBackend
from munjang.inference.hardware import cpu_has_fast_bf16
from munjang.inference.onnx_backend import OnnxBackend
from munjang.inference.onnx_export import onnx_artifact
from munjang.models.hub import embedded_default_path

TEXTS = [
    "A man is playing a guitar on the stage.",
    "The quick brown fox jumps over the lazy dog.",
    "Stocks fell sharply on Monday after the central bank raised interest rates by half a point, "
    "the largest increase in more than two decades, to fight inflation that shows no sign of easing.",
    "Hi",
    "Two children are building a sandcastle at the beach while their parents watch.",
    "How do I reset my password?",
    "오늘 날씨가 정말 좋네요.",
    "The committee will publish its findings next spring.",
]
FP32_ATOL = 1e-4
# Mean-pooled cosine to torch fp32 measured on TEXTS: ONNX Runtime int8 mean 0.9901 / min 0.9802,
# OpenVINO int8 0.9995 / 0.9988 with SmoothQuant (0.9990 / 0.9973 without it; per-tensor weights
# instead of per-channel: 0.964 / 0.80 on STSb). Thresholds per backend: (mean, min).
INT8_COSINE = {"onnx": (0.985, 0.96), "openvino": (0.998, 0.996)}
ARTIFACTS = "munjang.inference.artifacts"


@pytest.fixture(scope="module", autouse=True)
def cache(isolated_cache: Path) -> Path:
    """User-cache artefacts of every test here go under tmp, never to ~/.cache."""
    return isolated_cache


@pytest.fixture(scope="module")
def encoder() -> munjang.SentenceEncoder:
    return munjang.load_encoder(None, device="cpu")


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A writable copy of the embedded model folder (the original sits in site-packages)."""
    folder = tmp_path_factory.mktemp("model") / "all-MiniLM-L6-v2"
    shutil.copytree(embedded_default_path(), folder, ignore=shutil.ignore_patterns("onnx"))
    return folder


@pytest.fixture(scope="module")
def batch(encoder: munjang.SentenceEncoder) -> dict[str, torch.Tensor]:
    transformer = encoder.transformer
    return transformer.collate(transformer.tokenize(TEXTS), range(len(TEXTS)))


@pytest.fixture(scope="module")
def reference(encoder: munjang.SentenceEncoder, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    with torch.inference_mode():
        return encoder.transformer(dict(batch))["token_embeddings"].float()


def make_backend(kind: str, transformer: Any, folder: Path | None, precision: str, **options: Any) -> Any:
    if kind == "openvino":
        pytest.importorskip("openvino")
        from munjang.inference.openvino_backend import OpenVinoBackend

        return OpenVinoBackend(transformer, folder, precision, **options)
    return OnnxBackend(transformer, folder, precision, **options)


@pytest.fixture(scope="module")
def backend(encoder: munjang.SentenceEncoder, model_folder: Path) -> Callable[..., Any]:
    """Backends on the writable model copy, built once per configuration."""
    built: dict[tuple, Any] = {}

    def get(kind: str, precision: str, **options: Any) -> Any:
        key = (kind, precision, tuple(sorted(options.items())))
        if key not in built:
            built[key] = make_backend(kind, encoder.transformer, model_folder, precision, **options)
        return built[key]

    return get


def real_diff(out: torch.Tensor, reference: torch.Tensor, batch: dict[str, torch.Tensor]) -> float:
    mask = batch["attention_mask"].bool()
    return float((out - reference)[mask].abs().max())


def pooled_cosine(out: torch.Tensor, reference: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    weights = mask.unsqueeze(-1).float()
    a, b = (out * weights).sum(1), (reference * weights).sum(1)
    return torch.nn.functional.cosine_similarity(a, b)


FP32 = [("onnx", {}), ("onnx", {"optimize": False}), ("openvino", {})]


@pytest.mark.parametrize(("kind", "options"), FP32, ids=["onnx", "onnx-basic", "openvino"])
def test_fp32_matches_torch(backend, batch, reference, kind, options):
    be = backend(kind, "fp32", **options)
    out = be.token_embeddings(batch)
    assert isinstance(be, TokenBackend)
    assert (be.name, be.precision, be.device) == (kind, "fp32", torch.device("cpu"))
    assert out.dtype == torch.float32 and out.shape == reference.shape
    assert real_diff(out, reference, batch) <= FP32_ATOL


# OpenVINO int8 also runs in test_encode_backends' agreement table; this one under -m slow.
@pytest.mark.parametrize("kind", ["onnx", pytest.param("openvino", marks=pytest.mark.slow)])
def test_int8_stays_close_to_fp32(backend, batch, reference, kind):
    be = backend(kind, "int8")
    out = be.token_embeddings(batch)
    assert out.dtype == torch.float32 and out.shape == reference.shape
    assert real_diff(out, reference, batch) > FP32_ATOL, "int8 output identical to fp32: not quantized?"
    cosine = pooled_cosine(out, reference, batch["attention_mask"])
    mean, least = INT8_COSINE[kind]
    assert float(cosine.mean()) >= mean, cosine
    assert float(cosine.min()) >= least, cosine


def test_openvino_bf16_runs_bf16_at_fp32_accuracy_or_says_why_not(backend, batch, reference, encoder):
    """bf16 compiles the fp32 graph with bf16 inference precision: half-precision matmuls, float
    accumulation, so pooled vectors stay within ~1e-5 cosine; a CPU without bf16 gets a clear error."""
    openvino = pytest.importorskip("openvino")
    if not cpu_has_fast_bf16():
        from munjang.inference.openvino_backend import OpenVinoBackend

        with pytest.raises(BackendError, match="bf16 instructions"):
            OpenVinoBackend(encoder.transformer, precision="bf16")
        return
    be = backend("openvino", "bf16")
    out = be.token_embeddings(batch)
    assert be._model("LATENCY", False).get_property("INFERENCE_PRECISION_HINT") == openvino.Type.bf16
    assert out.dtype == torch.float32 and out.shape == reference.shape
    assert real_diff(out, reference, batch) > FP32_ATOL, "bf16 output identical to fp32: not bf16?"
    cosine = pooled_cosine(out, reference, batch["attention_mask"])
    assert float(cosine.mean()) >= 0.9999 and float(cosine.min()) >= 0.9995, cosine
    fp32 = backend("openvino", "fp32")
    assert fp32._model("LATENCY", False).get_property("INFERENCE_PRECISION_HINT") == openvino.Type.f32
    assert fp32.model_path == be.model_path  # one cached graph serves both precisions


def test_openvino_bf16_on_a_cpu_without_bf16_names_the_missing_instructions(encoder, monkeypatch):
    pytest.importorskip("openvino")
    from munjang.inference import openvino_backend

    monkeypatch.setattr(openvino_backend, "cpu_has_fast_bf16", lambda: False)
    with pytest.raises(BackendError, match="bf16 instructions"):
        openvino_backend.OpenVinoBackend(encoder.transformer, precision="bf16")


def test_missing_token_types_and_empty_batch(backend, batch, reference):
    be = backend("onnx", "fp32")
    without = {k: v for k, v in batch.items() if k != "token_type_ids"}
    assert real_diff(be.token_embeddings(without), reference, batch) <= FP32_ATOL
    empty = {k: v[:0] for k, v in batch.items()}
    assert be.token_embeddings(empty).shape == (0, batch["input_ids"].shape[1], 384)


def test_artifacts_beside_the_model_with_a_manifest(backend, encoder, model_folder):
    be = backend("onnx", "fp32")
    assert be.model_path == model_folder / "onnx" / "munjang-fp32.onnx"
    manifest = json.loads(manifest_path(be.model_path).read_text())
    assert manifest["fingerprint"] == model_fingerprint(encoder.transformer)
    assert manifest["sha256"] == file_sha256(be.model_path)
    assert manifest["precision"] == "fp32" and manifest["opset"] >= 17
    assert manifest["munjang"] == munjang.__version__ and manifest["exporter"] == "torchscript"
    assert manifest["versions"]["onnxruntime"] and "openvino" in manifest["versions"]


@pytest.mark.parametrize(("kind", "precision"), [("onnx", "fp32"), ("onnx", "int8"), ("openvino", "fp32")])
def test_second_construction_reuses_the_artifact(backend, encoder, model_folder, caplog, kind, precision):
    first = backend(kind, precision)
    before = first.model_path.stat().st_mtime_ns, manifest_path(first.model_path).read_text()
    with caplog.at_level(logging.INFO, logger=ARTIFACTS):
        second = make_backend(kind, encoder.transformer, model_folder, precision)
    assert second.model_path == first.model_path
    assert (second.model_path.stat().st_mtime_ns, manifest_path(second.model_path).read_text()) == before
    assert not [r for r in caplog.records if r.name == ARTIFACTS], caplog.text


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _garble_manifest(path: Path) -> None:
    manifest_path(path).write_text('{"format": 1, "sha256": ')


def _unloadable_but_hash_matches(path: Path) -> None:
    """Bytes no runtime accepts, with a manifest that vouches for them: only loading can tell."""
    path.write_bytes(b"this is not an ONNX model" * 100)
    manifest = json.loads(manifest_path(path).read_text())
    manifest.update(bytes=path.stat().st_size, sha256=file_sha256(path))
    manifest_path(path).write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("corrupt", "reason"),
    [
        (_truncate, "do not match its manifest"),
        (_garble_manifest, "manifest is unreadable"),
        (_unloadable_but_hash_matches, "ONNX Runtime could not load"),
    ],
    ids=["truncated", "garbled-manifest", "unloadable"],
)
def test_corrupt_artifact_is_rebuilt_with_a_warning(
    backend, encoder, model_folder, batch, reference, caplog, corrupt, reason
):
    path = backend("onnx", "fp32").model_path
    corrupt(path)
    with caplog.at_level(logging.WARNING):
        rebuilt = OnnxBackend(encoder.transformer, model_folder, "fp32")
    assert reason in caplog.text and "rebuilding" in caplog.text, caplog.text
    assert rebuilt.model_path == path
    assert json.loads(manifest_path(path).read_text())["sha256"] == file_sha256(path)
    assert real_diff(rebuilt.token_embeddings(batch), reference, batch) <= FP32_ATOL


def test_installed_model_folder_falls_back_to_the_cache(encoder, cache, batch, reference):
    installed = embedded_default_path()  # inside site-packages: pip's files, not ours to add to
    before = sorted(p.name for p in installed.iterdir())
    be = OnnxBackend(encoder.transformer, installed, "fp32", optimize=False)
    fingerprint = model_fingerprint(encoder.transformer)
    assert be.model_path == cache / "artifacts" / fingerprint[:32] / "onnx" / "munjang-fp32.onnx"
    assert sorted(p.name for p in installed.iterdir()) == before
    assert real_diff(be.token_embeddings(batch), reference, batch) <= FP32_ATOL


def test_unwritable_or_missing_model_folder_falls_back_to_the_cache(encoder, cache, tmp_path):
    fingerprint = model_fingerprint(encoder.transformer)
    cached = cache / "artifacts" / fingerprint[:32] / "onnx"
    blocked = tmp_path / "model"
    blocked.mkdir()
    (blocked / "onnx").write_text("a file where the artefact folder would go")
    assert artifact_dir(blocked, encoder.transformer, "onnx", fingerprint) == cached
    assert artifact_dir(tmp_path / "missing", encoder.transformer, "onnx", fingerprint) == cached
    assert artifact_dir(None, encoder.transformer, "onnx") == cached
    assert not (tmp_path / "missing").exists()


def test_concurrent_builds_export_once(encoder, tmp_path, caplog):
    folder = tmp_path / "model"
    folder.mkdir()
    paths: list[Path] = []
    with caplog.at_level(logging.INFO, logger=ARTIFACTS):
        workers = [
            threading.Thread(target=lambda: paths.append(onnx_artifact(encoder.transformer, folder, "fp32")))
            for _ in range(2)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert paths == [folder / "onnx" / "munjang-fp32.onnx"] * 2
    assert caplog.text.count("building") == 1, caplog.text
    assert not list((folder / "onnx").glob(".*.tmp*"))


def test_errors_name_the_missing_package_and_bad_precision(encoder, monkeypatch):
    with pytest.raises(BackendError, match="precision"):
        OnnxBackend(encoder.transformer, precision="bf16")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(BackendError, match="pip install onnxruntime"):
        OnnxBackend(encoder.transformer)
    monkeypatch.setitem(sys.modules, "openvino", None)
    from munjang.inference.openvino_backend import OpenVinoBackend

    with pytest.raises(BackendError, match=r"pip install .munjang\[openvino\]"):
        OpenVinoBackend(encoder.transformer)
