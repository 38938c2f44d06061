"""The OpenVINO backend's graph on disk: the cached ONNX artefact converted once to OpenVINO's own format
(IR: `munjang-<variant>.ov.xml` + `.ov.bin`, beside the ONNX file, with a manifest like it).

Why. Reading an ONNX file parses its protobuf into memory and copies every constant out of it: for a
moment the process holds the weights twice over on top of whatever it held before. An IR file's weights
are mapped from disk instead (`ENABLE_MMAP`): no transient copy, and the pages the compiled model uses
as they are (the embedding table) stay clean file pages that the kernel can drop and that several
processes serving the same model share. The conversion runs once per ONNX artefact (a cold cache).

The `.bin` holds no header to check, so the manifest records its size and SHA-256 too: a weights file
that does not match is rebuilt, like any stale artefact.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .artifacts import ARTIFACT_FORMAT, ensure_artifact, file_sha256, manifest_path
from .onnx_export import _manifest_field

IR_SUFFIX = ".ov.xml"


def ir_paths(onnx_path: Path) -> tuple[Path, Path]:
    """(xml, bin) of the IR converted from `onnx_path` (`munjang-fp32.onnx` -> `munjang-fp32.ov.xml`)."""
    stem = onnx_path.name.removesuffix(".onnx")
    return onnx_path.with_name(stem + IR_SUFFIX), onnx_path.with_name(stem + ".ov.bin")


def _weights_problem(xml: Path, weights: Path) -> bool:
    """Whether the `.bin` beside `xml` is missing or differs from what its manifest recorded."""
    if not weights.exists():
        return True
    size = _manifest_field(xml, "weights_bytes")
    if size != weights.stat().st_size:
        return True
    return _manifest_field(xml, "weights_sha256") != file_sha256(weights)


def ir_artifact(ov: Any, core: Any, onnx_path: Path, rebuild: bool = False) -> tuple[Path, Path]:
    """The checked IR (xml, bin) converted from the ONNX artefact at `onnx_path`, converted when missing
    or stale (under the same lock and atomic writes as every artefact)."""
    xml, weights = ir_paths(onnx_path)
    expect = {
        "format": ARTIFACT_FORMAT,
        "source_sha256": _manifest_field(onnx_path, "sha256"),
        "openvino": ov.get_version(),
    }

    def build(tmp: Path) -> dict[str, Any]:
        graph = core.read_model(str(onnx_path))
        ov.save_model(graph, str(tmp), compress_to_fp16=False)  # the ONNX file's float types, unchanged
        del graph
        written = tmp.with_suffix(".bin")
        info = {"weights_bytes": written.stat().st_size, "weights_sha256": file_sha256(written)}
        os.replace(written, weights)  # before the xml and its manifest appear
        return info

    rebuild = rebuild or (manifest_path(xml).exists() and xml.exists() and _weights_problem(xml, weights))
    ensure_artifact(xml, expect, build, rebuild=rebuild)
    return xml, weights
