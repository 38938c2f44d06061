"""OpenVINO backend: the cached ONNX graph compiled by OpenVINO for the CPU.

OpenVINO reads the ONNX artefact directly. fp32 compiles the plain export with the inference
precision pinned to f32: on CPUs with bf16 support OpenVINO would otherwise run in bf16 without saying
so. bf16 compiles the same graph with the inference precision set to bf16 on CPUs that have bf16
instructions (AVX-512 BF16 or AMX): matmuls in bf16 with float accumulation, mean cosine to fp32
0.99999 on MiniLM. On a 2-core AVX-512 BF16 EPYC its FullyConnected layers run at ~730 GFLOP/s (the
bf16 peak there) and it was the fastest graph at fp32 accuracy (bench/int8_variants.py: 1.22x the int8
graph); end to end it is within machine noise of int8, closer to fp32, and needs no calibration. int8
compiles the graph whose MatMul weights are int8 (per output channel, symmetric); OpenVINO
then runs those MatMuls in int8, quantizing activations on the fly in groups, which is both faster and
closer to fp32 than feeding it ONNX Runtime's dynamically quantized graph (measured slower than fp32).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .base import BackendError
from .hardware import cpu_has_fast_bf16
from .onnx_backend import check_precision
from .onnx_export import batch_arrays, open_artifact

logger = logging.getLogger(__name__)

# One synchronous request at a time: the latency hint gives it every thread (the throughput hint
# splits the threads into streams that a single request cannot use).
PERFORMANCE_HINT = "LATENCY"


def _openvino() -> Any:
    try:
        import openvino
    except ImportError as e:
        raise BackendError("the openvino backend needs OpenVINO (pip install openvino)") from e
    return openvino


class OpenVinoBackend:
    """Token embeddings from OpenVINO on the CPU, compiled from the cached ONNX graph.

    `model_folder` is where the model was loaded from (see `OnnxBackend`); `threads` is OpenVINO's
    inference thread count (default torch's). Each calling thread gets its own infer request.
    """

    name = "openvino"

    def __init__(
        self,
        transformer: Any,
        model_folder: str | Path | None = None,
        precision: str = "fp32",
        threads: int | None = None,
    ) -> None:
        check_precision(self.name, precision)
        ov = _openvino()
        self.precision = precision
        self.threads = int(threads or torch.get_num_threads())
        self.hidden_size = int(transformer.hidden_size)
        variant = "int8-weights" if precision == "int8" else "fp32"
        core = ov.Core()
        if precision == "bf16" and not cpu_has_fast_bf16():  # the same test "auto" makes
            raise BackendError(
                "the openvino backend's bf16 needs a CPU with bf16 instructions (AVX-512 BF16 or AMX); "
                "this one has none: use precision fp32 or int8"
            )
        self.model_path, self._compiled = open_artifact(
            transformer, model_folder, variant, lambda path: self._compile(core, path), "OpenVINO"
        )
        self._inputs = [port.get_any_name() for port in self._compiled.inputs]
        self._output = self._compiled.output(0)
        self._local = threading.local()

    def _compile(self, core: Any, path: Path) -> Any:
        config = {
            "PERFORMANCE_HINT": PERFORMANCE_HINT,
            "INFERENCE_NUM_THREADS": self.threads,
            "INFERENCE_PRECISION_HINT": "bf16" if self.precision == "bf16" else "f32",
        }
        return core.compile_model(core.read_model(str(path)), "CPU", config)

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def _request(self) -> Any:
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self._compiled.create_infer_request()
        return request

    def token_embeddings(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """float32 (batch, seq, hidden) token vectors of a padded batch."""
        rows, width = batch["input_ids"].shape
        if rows == 0 or width == 0:
            return torch.zeros((rows, width, self.hidden_size), dtype=torch.float32)
        result = self._request().infer(batch_arrays(batch, self._inputs))
        # The request reuses its output buffer on the next call, so the result is copied out.
        return torch.from_numpy(np.array(result[self._output], dtype=np.float32, copy=True))

    def __repr__(self) -> str:
        return (
            f"OpenVinoBackend(precision={self.precision!r}, threads={self.threads}, model={self.model_path})"
        )
