"""ONNX graphs of a Transformer's backbone, built from the model in memory and checked against it.

Variants, each a cached artefact (see `artifacts`):

- "fp32": the backbone exported with torch's TorchScript exporter (`dynamo=False`: several times
  quicker to export than the dynamo exporter, which is the fallback), inputs `input_ids`,
  `attention_mask` [, `token_type_ids`] with dynamic batch and sequence axes, output `last_hidden_state`.
  Used by ONNX Runtime and OpenVINO alike. Its attention masks padding with a finite value and has no
  NaN guard after the softmax (`attention_masks.py`). (ONNX Runtime's `transformers.optimizer` BERT fusion was
  compared with it on MiniLM and lost: slower on short sentences, no faster on longer inputs; so it
  is not applied.)
- "int8-dynamic": "fp32" with dynamic int8 quantization for ONNX Runtime: int8 symmetric per-channel
  weights, uint8 activations quantized per batch: sentence-transformers' "avx512_vnni" settings (its
  "Add" has no dynamic int8 form, so only MatMul changes); quantizing the fused graph was slower.
- "int8-weights": "fp32" with int8 symmetric per-channel weights behind DequantizeLinear and float
  activations, for OpenVINO, which runs these MatMuls as int8 with activations quantized on the fly
  (the same graph NNCF's INT8_SYM weight compression writes), after SmoothQuant (`smoothquant.py`)
  has moved the activations' outlier channels into the weights.
- "int8-static": "fp32" with calibrated static int8 on the MatMuls that tolerate it (`static_int8.py`,
  NNCF): QuantizeLinear/DequantizeLinear pairs that OpenVINO runs as int8 kernels, the attention
  MatMuls and FFN down-projections left in float. Calibrated on the bundled texts (`calibration.py`).

Every new graph is run on a few sentences and compared with the torch model before it is stored.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import warnings
from collections.abc import Iterator, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import smoothquant, static_int8
from .artifacts import (
    ARTIFACT_FORMAT,
    artifact_dir,
    ensure_artifact,
    manifest_path,
    model_fingerprint,
    munjang_version,
)
from .attention_masks import drop_nan_guards_in_file
from .base import BackendError, onnxruntime_module

logger = logging.getLogger(__name__)

VARIANTS = ("fp32", "int8-dynamic", "int8-weights", "int8-static")
OUTPUT_NAME = "last_hidden_state"
TORCHSCRIPT_OPSET = 17
DYNAMO_OPSET = 18
# A single-file ONNX graph cannot exceed protobuf's 2 GiB; leave room for the graph itself.
MAX_WEIGHT_BYTES = 2_000_000_000
FP32_TOLERANCE = 1e-3  # max abs difference at real tokens accepted for an fp32 graph
INT8_MIN_COSINE = 0.9  # min cosine of mean-pooled vectors accepted for an int8 graph

_PROBE_TEXTS = (
    "munjang turns sentences into vectors.",
    "A second, noticeably longer sentence, so that the padded batch has positions to mask out.",
    "짧은 문장",
)


def input_names(transformer: Any) -> list[str]:
    """The graph inputs, in order: token type ids only for models whose tokenizer produces them."""
    names = ["input_ids", "attention_mask"]
    if transformer._wants_token_type_ids:
        names.append("token_type_ids")
    return names


def _package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def batch_arrays(batch: dict[str, torch.Tensor], names: list[str]) -> dict[str, np.ndarray]:
    """The graph's inputs as C-contiguous int64 numpy arrays (zero token types when the batch has none)."""
    ids = batch["input_ids"]
    feed = {}
    for name in names:
        tensor = batch.get(name)
        if tensor is None:
            if name != "token_type_ids":
                raise KeyError(f"the batch has no {name!r}")
            tensor = torch.zeros_like(ids)
        feed[name] = np.ascontiguousarray(tensor.detach().to("cpu", torch.int64).numpy())
    return feed


def _probe_batch(transformer: Any, rows: Sequence[int] = (0, 1, 2)) -> dict[str, torch.Tensor]:
    return dict(transformer.collate(transformer.tokenize(_PROBE_TEXTS), list(rows)))


class _LastHidden(torch.nn.Module):
    """The backbone as a function of its input tensors returning only `last_hidden_state`."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        return self.model(**inputs, return_dict=True).last_hidden_state


def _float_cpu_model(transformer: Any) -> torch.nn.Module:
    """The backbone itself when it is float32 on the CPU, else a float32 CPU copy (the export's precision)."""
    model = transformer.auto_model
    tensors = [*model.parameters(), *model.buffers()]
    size = sum(t.numel() * 4 for t in tensors if t.is_floating_point())
    if size > MAX_WEIGHT_BYTES:
        raise BackendError(
            f"the model's float32 weights take {size / 1e9:.1f} GB; "
            "a single-file ONNX graph holds at most 2 GB"
        )
    if all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors if t.is_floating_point()):
        return model
    return copy.deepcopy(model).to(device="cpu", dtype=torch.float32)


@contextlib.contextmanager
def _eval_mode(model: torch.nn.Module) -> Iterator[None]:
    """Eval mode (no dropout) for the export, the previous mode restored afterwards."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def _export_torchscript(model: torch.nn.Module, names: list[str], example: dict, dst: Path) -> int:
    axes = {name: {0: "batch", 1: "sequence"} for name in [*names, OUTPUT_NAME]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation and tracer notices about code paths we verify below
        torch.onnx.export(
            _LastHidden(model),
            tuple(example[n] for n in names),
            str(dst),
            input_names=names,
            output_names=[OUTPUT_NAME],
            dynamic_axes=axes,
            opset_version=TORCHSCRIPT_OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    return TORCHSCRIPT_OPSET


def _export_dynamo(model: torch.nn.Module, names: list[str], example: dict, dst: Path) -> int:
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            _LastHidden(model),
            tuple(example[n] for n in names),
            input_names=names,
            output_names=[OUTPUT_NAME],
            dynamic_shapes={name: {0: batch, 1: sequence} for name in names},
            opset_version=DYNAMO_OPSET,
            dynamo=True,
            verbose=False,
        )
    if program is None:
        raise BackendError("the dynamo exporter returned no program")
    program.save(str(dst), external_data=False)
    return DYNAMO_OPSET


def run_onnx(path: Path, batch: Mapping[str, torch.Tensor], threads: int = 1) -> np.ndarray:
    """`last_hidden_state` of the graph at `path` on `batch`, with ONNX Runtime on the CPU."""
    ort = onnxruntime_module()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feed = {i.name: batch[i.name].numpy() for i in session.get_inputs()}
    return np.asarray(session.run([OUTPUT_NAME], feed)[0])


def _mean_pool(tokens: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[..., None].astype(np.float64)
    return (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)


def _check_outputs(path: Path, batch: dict[str, torch.Tensor], reference: np.ndarray, precision: str) -> None:
    """Raise BackendError unless the graph at `path` reproduces `reference` (float32 tokens) on `batch`."""
    out = run_onnx(path, batch)
    mask = batch["attention_mask"].numpy()
    if out.shape != reference.shape or not np.isfinite(out[mask.astype(bool)]).all():
        raise BackendError(
            f"the ONNX graph gives shape {out.shape} or non-finite values, not {reference.shape}"
        )
    if precision == "fp32":
        diff = float(np.abs(out - reference)[mask.astype(bool)].max())
        if diff > FP32_TOLERANCE:
            raise BackendError(
                f"the ONNX graph differs from torch by up to {diff:.2e} (limit {FP32_TOLERANCE})"
            )
        return
    a, b = _mean_pool(out, mask), _mean_pool(reference, mask)
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    if float(cosine.min()) < INT8_MIN_COSINE:
        raise BackendError(
            f"int8 quantization changes this model's sentence vectors too much (cosine {cosine.min():.3f} "
            f"to the float32 model, limit {INT8_MIN_COSINE}); use precision fp32"
        )


def _reference(model: torch.nn.Module, batch: dict[str, torch.Tensor], names: list[str]) -> np.ndarray:
    with torch.inference_mode():
        out = model(**{n: batch[n] for n in names}, return_dict=True).last_hidden_state
    return out.float().cpu().numpy()


def _reference_of(transformer: Any, batch: dict[str, torch.Tensor]) -> np.ndarray:
    model = _float_cpu_model(transformer)
    with _eval_mode(model):
        return _reference(model, batch, input_names(transformer))


def export_fp32(transformer: Any, dst: Path) -> dict[str, Any]:
    """Write the backbone's float32 graph to `dst` (TorchScript exporter, dynamo if that fails); checked."""
    if getattr(transformer, "task", "feature-extraction") != "feature-extraction":
        raise BackendError("only feature-extraction transformers (token embeddings) can be exported")
    model = _float_cpu_model(transformer)
    names = input_names(transformer)
    example, check = _probe_batch(transformer, (0, 2)), _probe_batch(transformer)
    errors = []
    with _eval_mode(model):
        reference = _reference(model, check, names)
        for exporter, export in (("torchscript", _export_torchscript), ("dynamo", _export_dynamo)):
            try:
                opset = export(model, names, example, dst)
                guards = drop_nan_guards_in_file(dst)
                _check_outputs(dst, check, reference, "fp32")
            except Exception as e:  # any failure of one exporter falls through to the next
                errors.append(f"{exporter} exporter: {type(e).__name__}: {e}")
                logger.info("ONNX export with the %s exporter failed: %s", exporter, e)
                continue
            return {"exporter": exporter, "opset": opset, "nan_guards_dropped": guards}
    raise BackendError("could not export the model to ONNX; " + "; ".join(errors))


class _PreprocessingHint(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Please consider to run pre-processing")


@contextlib.contextmanager
def _without_preprocessing_hint() -> Iterator[None]:
    """Hide ONNX Runtime's root-logger advice to pre-process (following it gains no speed or accuracy)."""
    hint = _PreprocessingHint()
    root = logging.getLogger()
    root.addFilter(hint)
    try:
        yield
    finally:
        root.removeFilter(hint)


def write_int8_dynamic(src: Path, dst: Path) -> None:
    """Write `src` with ONNX Runtime dynamic int8 quantization of its weight MatMuls to `dst` (unchecked)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _without_preprocessing_hint():
        quantize_dynamic(
            str(src),
            str(dst),
            op_types_to_quantize=["MatMul"],
            per_channel=True,
            reduce_range=False,
            weight_type=QuantType.QInt8,
            extra_options={
                "WeightSymmetric": True,
                "ActivationSymmetric": False,
                "MatMulConstBOnly": True,
                "DefaultTensorType": onnx.TensorProto.FLOAT,
            },
        )


def quantize_int8_dynamic(transformer: Any, src: Path, dst: Path) -> dict[str, Any]:
    """Write `src` with ONNX Runtime dynamic int8 quantization of its weight MatMuls to `dst`; checked."""
    write_int8_dynamic(src, dst)
    settings = {"per_channel": True, "reduce_range": False, "weights": "QInt8 symmetric"}
    batch = _probe_batch(transformer)
    _check_outputs(dst, batch, _reference_of(transformer, batch), "int8")
    return {"quantization": settings}


def quantize_int8_weights(transformer: Any, src: Path, dst: Path, smooth: bool = True) -> dict[str, Any]:
    """Write `src` with int8 symmetric per-output-channel MatMul weights (DequantizeLinear) to `dst`; checked.

    Only float32 2-D initializers read solely as the B input of MatMul nodes are quantized, so shared
    weights (e.g. tied embeddings read by a Gather) keep their float copy. `smooth` applies SmoothQuant
    first (calibrated on the bundled demo sentences).
    """
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    texts = smoothquant.calibration_texts() if smooth else []
    smoothed = smoothquant.smooth(model, _numpy_batches(transformer, texts)) if smooth else 0
    graph = model.graph
    initializers = {init.name: init for init in graph.initializer}
    uses: dict[str, list[tuple[str, int]]] = {}
    for node in graph.node:
        for position, name in enumerate(node.input):
            uses.setdefault(name, []).append((node.op_type, position))
    dequantized: dict[str, str] = {}
    nodes = []
    for node in graph.node:
        weight = node.input[1] if node.op_type == "MatMul" and len(node.input) == 2 else ""
        if weight in dequantized:
            node.input[1] = dequantized[weight]
        elif weight in initializers and all(use == ("MatMul", 1) for use in uses[weight]):
            w = numpy_helper.to_array(initializers[weight])
            if w.ndim == 2 and w.dtype == np.float32:
                scale = (np.abs(w).max(axis=0) / 127.0).astype(np.float32)
                scale[scale == 0] = 1.0
                q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
                graph.initializer.remove(initializers.pop(weight))
                graph.initializer.extend(
                    [
                        numpy_helper.from_array(q, f"{weight}_int8"),
                        numpy_helper.from_array(scale, f"{weight}_scale"),
                        numpy_helper.from_array(np.zeros_like(scale, dtype=np.int8), f"{weight}_zero"),
                    ]
                )
                dequantized[weight] = f"{weight}_dequantized"
                nodes.append(
                    helper.make_node(
                        "DequantizeLinear",
                        [f"{weight}_int8", f"{weight}_scale", f"{weight}_zero"],
                        [dequantized[weight]],
                        axis=1,
                    )
                )
                node.input[1] = dequantized[weight]
        nodes.append(node)
    if not dequantized:
        raise BackendError("the ONNX graph has no MatMul weights to quantize to int8")
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.save(model, str(dst))
    batch = _probe_batch(transformer)
    _check_outputs(dst, batch, _reference_of(transformer, batch), "int8")
    return {
        "quantization": {"per_channel": True, "weights": "int8 symmetric", "matmuls": len(dequantized)},
        "smoothquant": {
            "alpha": smoothquant.ALPHA,
            "matmul_inputs": smoothed,
            "calibration_sentences": len(texts),
        }
        if smooth
        else None,
    }


def quantize_int8_static(transformer: Any, src: Path, dst: Path) -> dict[str, Any]:
    """Write `src` with static int8 (`static_int8.quantize`) to `dst`, calibrated on the bundled texts
    in length-sorted batches (so padding does not widen the ranges); checked."""
    from .calibration import calibration_texts

    texts = sorted(calibration_texts(), key=len)
    info = static_int8.quantize_file(src, dst, _numpy_batches(transformer, texts))
    batch = _probe_batch(transformer)
    _check_outputs(dst, batch, _reference_of(transformer, batch), "int8")
    return {"quantization": {**info, "calibration_texts": len(texts)}}


def _numpy_batches(transformer: Any, texts: Sequence[str], rows: int = 16) -> list[dict[str, np.ndarray]]:
    """`texts` as the graph's inputs, `rows` sentences per padded batch."""
    features = transformer.tokenize(list(texts))
    names = input_names(transformer)
    return [
        batch_arrays(transformer.collate(features, list(range(start, min(start + rows, len(texts))))), names)
        for start in range(0, len(texts), rows)
    ]


_DERIVE = {
    "int8-dynamic": quantize_int8_dynamic,
    "int8-weights": quantize_int8_weights,
    "int8-static": quantize_int8_static,
}
_BUILT_BY_ONNXRUNTIME = {"int8-dynamic"}  # graphs written by ONNX Runtime's tools, tied to its version


def onnx_artifact(
    transformer: Any,
    model_folder: str | Path | None,
    variant: str,
    fingerprint: str | None = None,
    rebuild: bool = False,
) -> Path:
    """Path of a checked `munjang-<variant>.onnx` for this model, exported or derived when not cached.

    `rebuild=True` builds it anew even when its manifest matches (for a file a runtime refused).
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown ONNX variant {variant!r}; choose from {', '.join(VARIANTS)}")
    fingerprint = fingerprint or model_fingerprint(transformer)
    folder = artifact_dir(model_folder, transformer, "onnx", fingerprint)
    expect: dict[str, Any] = {
        "format": ARTIFACT_FORMAT,
        "munjang": munjang_version(),
        "variant": variant,
        "precision": variant.split("-")[0],
        "fingerprint": fingerprint,
    }
    if variant in _BUILT_BY_ONNXRUNTIME:
        expect["onnxruntime"] = onnxruntime_module().__version__
    if variant == "int8-weights":
        expect["recipe"] = smoothquant.RECIPE
    if variant == "int8-static":
        expect["recipe"] = static_int8.RECIPE
        expect["nncf"] = static_int8.nncf_version()

    def build(tmp: Path) -> dict[str, Any]:
        if variant == "fp32":
            info = export_fp32(transformer, tmp)
        else:
            source = onnx_artifact(transformer, model_folder, "fp32", fingerprint)
            info = {**_DERIVE[variant](transformer, source, tmp), "opset": _manifest_field(source, "opset")}
        versions = {
            name: _package_version(name)
            for name in ("torch", "transformers", "onnx", "onnxruntime", "openvino")
        }
        return {**info, "versions": versions}

    return ensure_artifact(folder / f"munjang-{variant}.onnx", expect, build, rebuild=rebuild)


def _manifest_field(artifact: Path, key: str) -> Any:
    try:
        return json.loads(manifest_path(artifact).read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError, AttributeError):
        return None


def open_artifact(
    transformer: Any, model_folder: str | Path | None, variant: str, open_graph: Any, runtime: str
) -> tuple[Path, Any]:
    """The cached graph of `variant` (exported when missing) opened with `open_graph(path)`.

    A file that passed its hash check yet does not open is exported again once; a second failure
    raises BackendError naming `runtime` and the file.
    """
    fingerprint = model_fingerprint(transformer)
    path = onnx_artifact(transformer, model_folder, variant, fingerprint)
    try:
        return path, open_graph(path)
    except Exception as e:
        logger.warning("%s could not load %s (%s); rebuilding it", runtime, path, e)
    path = onnx_artifact(transformer, model_folder, variant, fingerprint, rebuild=True)
    try:
        return path, open_graph(path)
    except Exception as again:
        raise BackendError(f"{runtime} cannot load {path}: {again}") from again
