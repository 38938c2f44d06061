"""Static int8: calibrated int8 activations and per-channel int8 weights on the MatMuls that tolerate it.

Dynamic int8 (`int8-weights`) quantizes each MatMul's input on the fly, in groups; the quantizing costs
time at every call, so on a CPU with bf16 instructions it is barely faster than bf16. Static int8 fixes
each activation's range once, from calibration texts, so the runtime runs int8 kernels (VNNI) with no
per-call range search. Done to every MatMul it drifts too far from fp32 (mean cosine about 0.998 on
MiniLM), so two kinds of MatMul stay in float (bf16 where the CPU has it):

- the attention MatMuls (scores and context), whose inputs are both activations: small, and the
  softmax around them amplifies rounding;
- the FFN down-projections (the weight MatMul that narrows, intermediate -> hidden): their input, the
  GELU output, has the widest range of any MatMul input, and keeping these recovers the most accuracy.

The recipe is NNCF's post-training quantization for transformers (SmoothQuant, calibrated ranges, fast
bias correction) on the ONNX graph, which writes QuantizeLinear/DequantizeLinear pairs that OpenVINO
fuses into int8 kernels. SmoothQuant's migration strength is `ALPHA`: 0.8 gave a higher mean cosine to
fp32 than NNCF's default (0.95) and than 0.5 on both MiniLM (English) and multilingual-e5-small
(Korean), on sentences kept apart from the speed benchmark's (bench/static_int8_alpha.py; figures in
docs/benchmarks.md).

Calibration holds several copies of the graph and its activations (about 5 GB for a model with a
250k-token vocabulary), so `quantize_file` runs it in a child Python process (`python -m
munjang.inference.static_int8`), which hands that memory back to the system when it ends instead of
leaving it in the caller's heap. A fresh interpreter, not multiprocessing, so a caller's script
without a `__main__` guard is never re-run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._util.extras import require
from ..errors import MissingExtraError
from .base import BackendError

ALPHA = 0.8
RECIPE = f"nncf-static-fc-down-float-alpha{ALPHA}"


def nncf_module() -> Any:
    """NNCF, or BackendError with the `pip install` that adds it."""
    try:
        return require("nncf")
    except MissingExtraError as e:
        raise BackendError(str(e)) from e


def nncf_version() -> str:
    """The installed NNCF's version (recorded with each graph, which is rebuilt when it changes), found
    without importing it; BackendError with the `pip install` when it is missing."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nncf")
    except PackageNotFoundError:
        nncf_module()  # raises the error naming the extra
        raise


def float_matmuls(model: Any) -> list[str]:
    """Names of the MatMul nodes left in float: activation x activation (attention) and the weight
    MatMuls whose weight narrows its input (FFN down-projections)."""
    weights = {t.name: t for t in model.graph.initializer}
    kept = []
    for node in model.graph.node:
        if node.op_type != "MatMul":
            continue
        weight = weights.get(node.input[1]) if len(node.input) == 2 else None
        if weight is None or len(weight.dims) != 2 or weight.dims[0] > weight.dims[1]:
            kept.append(node.name)
    return kept


def quantize(
    model: Any, batches: Sequence[dict[str, np.ndarray]], alpha: float = ALPHA
) -> tuple[Any, dict[str, Any]]:
    """(the static int8 ONNX model of `model`, what was done), ranges calibrated on `batches`;
    `alpha` is SmoothQuant's migration strength."""
    nncf = nncf_module()
    kept = float_matmuls(model)
    if any(not node.name for node in model.graph.node if node.op_type == "MatMul"):
        raise BackendError("the ONNX graph has unnamed MatMul nodes; static int8 needs them named")
    matmuls = sum(node.op_type == "MatMul" for node in model.graph.node)
    if matmuls == len(kept):
        raise BackendError("the ONNX graph has no MatMul that static int8 would quantize")
    names = [i.name for i in model.graph.input]
    dataset = nncf.Dataset(list(batches), lambda batch: {k: batch[k] for k in names if k in batch})
    advanced = nncf.AdvancedQuantizationParameters(
        smooth_quant_alphas=nncf.AdvancedSmoothQuantParameters(matmul=alpha)
    )
    nncf_logger = logging.getLogger("nncf")
    level = nncf_logger.level
    nncf_logger.setLevel(logging.ERROR)  # one line per MatMul it leaves alone, and progress bars
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            quantized = nncf.quantize(
                model,
                dataset,
                model_type=nncf.ModelType.TRANSFORMER,
                subset_size=len(batches),
                ignored_scope=nncf.IgnoredScope(names=kept),
                advanced_parameters=advanced,
            )
    finally:
        nncf_logger.setLevel(level)
    return quantized, {
        "activations": "int8, static per-tensor ranges",
        "weights": "int8 per channel",
        "int8_matmuls": matmuls - len(kept),
        "float_matmuls": len(kept),
        "smoothquant_alpha": alpha,
        "calibration_batches": len(batches),
        "nncf": nncf.__version__,
    }


def quantize_file(
    src: Path, dst: Path, batches: Sequence[dict[str, np.ndarray]], alpha: float = ALPHA
) -> dict[str, Any]:
    """Write the static int8 graph of the ONNX file `src` to `dst` from a child process; return what
    was done. A failure there is raised here as BackendError with the child's last words."""
    nncf_version()  # a missing extra is reported here, with its install line, without importing NNCF
    with tempfile.TemporaryDirectory(prefix="munjang-int8-") as work:
        inputs = Path(work) / "batches.npz"
        arrays: dict[str, Any] = {f"{i}:{k}": v for i, batch in enumerate(batches) for k, v in batch.items()}
        np.savez(inputs, **arrays)
        info = Path(work) / "info.json"
        command = [sys.executable, "-m", __name__, str(src), str(dst), str(inputs), str(info), str(alpha)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise BackendError(f"static int8 calibration failed (exit {done.returncode}): {last}")
        return dict(json.loads(info.read_text(encoding="utf-8")))


def _main(argv: list[str] | None = None) -> None:
    import onnx

    parser = argparse.ArgumentParser(description="munjang's static int8 calibration (used by quantize_file)")
    for name in ("src", "dst", "batches", "info"):
        parser.add_argument(name)
    parser.add_argument("alpha", type=float)
    args = parser.parse_args(argv)
    with np.load(args.batches) as saved:
        grouped: dict[int, dict[str, np.ndarray]] = {}
        for key in saved.files:
            index, name = key.split(":", 1)
            grouped.setdefault(int(index), {})[name] = saved[key]
    quantized, info = quantize(onnx.load(args.src), [grouped[i] for i in sorted(grouped)], args.alpha)
    onnx.save(quantized, args.dst)
    Path(args.info).write_text(json.dumps(info), encoding="utf-8")


if __name__ == "__main__":
    _main()
