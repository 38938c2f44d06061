"""Backend selection: validate (backend, precision), resolve "auto", and build the backend object."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from .base import BACKENDS, BackendError, TokenBackend
from .hardware import best_precision

if TYPE_CHECKING:
    from ..modules.transformer import Transformer


def resolve_backend(backend: str, precision: str, device: torch.device) -> tuple[str, str]:
    """Check the names and turn precision "auto" into the fastest precision that keeps fp32 accuracy
    on `device`: bf16 where the CPU has bf16 matrix instructions (torch, openvino) or on a GPU
    (torch), else fp32."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")
    if backend != "torch" and device.type != "cpu":
        raise ValueError(f"the {backend} backend runs on the CPU; move the encoder to cpu or use torch")
    if precision == "auto":
        precision = best_precision(device) if backend in ("torch", "openvino") else "fp32"
    if precision not in BACKENDS[backend]:
        offered = ", ".join(BACKENDS[backend])
        raise ValueError(f"the {backend} backend offers precision {offered} (or auto), not {precision!r}")
    return backend, precision


def build_backend(
    backend: str,
    precision: str,
    transformer: Transformer,
    model_folder: Path | None,
    options: dict[str, Any],
    before_compile: Callable[[], None] | None = None,
) -> TokenBackend:
    """Construct the backend; ONNX and OpenVINO export (or reuse) their artefacts here.

    `options` may hold settings for any backend; each takes the ones it knows (torch: lean;
    onnx: threads, optimize; openvino: threads). `before_compile` runs once OpenVINO's graph files are
    ready, before it compiles them (the other backends ignore it)."""
    if backend == "torch":
        from .torch_backend import torch_backend

        backend_object: TokenBackend = torch_backend(
            transformer.auto_model, precision, lean=options.get("lean")
        )
        return backend_object
    if backend == "onnx":
        from .onnx_backend import OnnxBackend

        onnx_options = {k: options[k] for k in ("threads", "optimize") if k in options}
        return OnnxBackend(transformer, model_folder=model_folder, precision=precision, **onnx_options)
    if backend == "openvino":
        from .openvino_backend import OpenVinoBackend

        threads = options.get("threads")
        return OpenVinoBackend(
            transformer,
            model_folder=model_folder,
            precision=precision,
            threads=threads,
            before_compile=before_compile,
        )
    raise BackendError(f"unknown backend {backend!r}")
