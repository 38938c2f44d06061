"""ONNX Runtime backend: the backbone as a cached ONNX graph, run on the CPU by ONNX Runtime.

fp32 runs the exported graph, int8 the dynamically quantized one (int8 weights, activations quantized
per batch). With `optimize` the session applies ONNX Runtime's full graph optimization (ORT_ENABLE_ALL,
done when the session loads: it is specific to the CPU and ONNX Runtime version, so it is not stored);
without it only the basic, exact rewrites (constant folding, redundant nodes).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .base import BACKENDS, BackendError, onnxruntime_module
from .onnx_export import OUTPUT_NAME, batch_arrays, open_artifact

logger = logging.getLogger(__name__)


def check_precision(backend: str, precision: str) -> None:
    """Raise BackendError when `backend` does not offer `precision`."""
    offered = BACKENDS[backend]
    if precision not in offered:
        raise BackendError(f"the {backend} backend offers precision {', '.join(offered)}, not {precision!r}")


class OnnxBackend:
    """Token embeddings from ONNX Runtime on the CPU, with the graph exported once and cached.

    `model_folder` is where the model was loaded from (artefacts go to its `onnx/` folder when
    writable, else to the user cache); `threads` is ONNX Runtime's intra-op thread count (default
    torch's); `optimize=False` limits ONNX Runtime to its basic graph rewrites.
    """

    name = "onnx"

    def __init__(
        self,
        transformer: Any,
        model_folder: str | Path | None = None,
        precision: str = "fp32",
        threads: int | None = None,
        optimize: bool = True,
    ) -> None:
        check_precision(self.name, precision)
        self._ort = onnxruntime_module()
        self.precision = precision
        self.threads = int(threads or torch.get_num_threads())
        self.hidden_size = int(transformer.hidden_size)
        self.optimize = optimize
        variant = "int8-dynamic" if precision == "int8" else "fp32"
        self.model_path, self._session = open_artifact(
            transformer, model_folder, variant, self._open, "ONNX Runtime"
        )
        self._inputs = [i.name for i in self._session.get_inputs()]

    def _open(self, path: Path) -> Any:
        ort = self._ort
        options = ort.SessionOptions()
        level = ort.GraphOptimizationLevel
        options.graph_optimization_level = level.ORT_ENABLE_ALL if self.optimize else level.ORT_ENABLE_BASIC
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def token_embeddings(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """float32 (batch, seq, hidden) token vectors of a padded batch."""
        rows, width = batch["input_ids"].shape
        if rows == 0 or width == 0:
            return torch.zeros((rows, width, self.hidden_size), dtype=torch.float32)
        out = self._session.run([OUTPUT_NAME], batch_arrays(batch, self._inputs))[0]
        return torch.from_numpy(np.asarray(out, dtype=np.float32))

    def __repr__(self) -> str:
        return f"OnnxBackend(precision={self.precision!r}, threads={self.threads}, model={self.model_path})"
