"""SmoothQuant (Xiao et al. 2023) for munjang's int8-weight graph: move activation outliers into the weights.

A few input channels of a transformer's MatMuls carry values far above the rest, so quantizing those
inputs to int8 (as OpenVINO does on the fly, in groups) spends its range on them. For each group of
weight MatMuls that read the same input X, with weights W (input channels as rows):

    s_j = max|X_j|^α / max|W_j|^(1-α)        X W = (X / s) (s W)

The graph divides X by s (one Mul, before the MatMuls) and the weights' rows are multiplied by s, which
in float is the same function (checked by the tests); int8 then loses less on X / s. max|X_j| comes
from the float graph run on calibration sentences: the bundled demo sentences (Korean and English) by
default. It brings the int8 graph closer to fp32 at the same speed (bench/int8_variants.py; figures
in docs/benchmarks.md).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

ALPHA = 0.5
RECIPE = f"smoothquant-alpha{ALPHA}"
_EPS = 1e-5


def calibration_texts() -> list[str]:
    """The bundled demo sentences (Korean and English, seven topics)."""
    from .._util.bundled import demo_documents

    return [d["text"] for d in demo_documents()]


def weight_matmul_groups(model: Any) -> dict[str, list[Any]]:
    """MatMul nodes whose B input is a float 2-D initializer, grouped by their A input's name."""
    from onnx import TensorProto

    weights = {t.name: t for t in model.graph.initializer}
    groups: dict[str, list[Any]] = defaultdict(list)
    for node in model.graph.node:
        if node.op_type != "MatMul" or len(node.input) != 2:
            continue
        weight = weights.get(node.input[1])
        if weight is not None and len(weight.dims) == 2 and weight.data_type == TensorProto.FLOAT:
            groups[node.input[0]].append(node)
    return dict(groups)


def activation_maxima(
    model: Any, names: Sequence[str], batches: Sequence[dict[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """Per-channel max |value| of the tensors `names` at real tokens over `batches` (ONNX Runtime)."""
    import onnx
    from onnx import helper

    from .base import onnxruntime_module

    # The tensors become extra graph outputs for one serialization, not a copy of the whole model.
    outputs = len(model.graph.output)
    for name in names:
        model.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    try:
        graph_bytes = model.SerializeToString()
    finally:
        del model.graph.output[outputs:]
    ort = onnxruntime_module()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(graph_bytes, options, providers=["CPUExecutionProvider"])
    del graph_bytes
    inputs = [i.name for i in session.get_inputs()]
    maxima: dict[str, np.ndarray] = {}
    for batch in batches:
        real = batch["attention_mask"].astype(bool)
        for name, value in zip(names, session.run(list(names), {k: batch[k] for k in inputs}), strict=True):
            m = np.abs(value[real]).max(axis=0)
            maxima[name] = np.maximum(maxima[name], m) if name in maxima else m
    return maxima


def smooth(model: Any, batches: Sequence[dict[str, np.ndarray]], alpha: float = ALPHA) -> int:
    """Fold SmoothQuant scales into `model` (an onnx ModelProto, changed in place); the number of
    MatMul inputs smoothed."""
    from onnx import helper, numpy_helper

    groups = weight_matmul_groups(model)
    if not groups:
        return 0
    maxima = activation_maxima(model, list(groups), batches)
    weights = {t.name: t for t in model.graph.initializer}
    muls: dict[str, Any] = {}
    for name, nodes in groups.items():
        w = [numpy_helper.to_array(weights[n.input[1]]) for n in nodes]
        w_max = np.max([np.abs(x).max(axis=1) for x in w], axis=0)
        s = np.maximum(maxima[name], _EPS) ** alpha / np.maximum(w_max, _EPS) ** (1 - alpha)
        s = s.astype(np.float32)
        model.graph.initializer.append(numpy_helper.from_array((1 / s).astype(np.float32), f"{name}_smooth"))
        muls[name] = helper.make_node("Mul", [name, f"{name}_smooth"], [f"{name}_smoothed"])
        for node, x in zip(nodes, w, strict=True):
            weights[node.input[1]].CopyFrom(numpy_helper.from_array(x * s[:, None], node.input[1]))
            node.input[0] = f"{name}_smoothed"
    nodes = list(model.graph.node)
    del model.graph.node[:]
    for node in nodes:  # each Mul right before the first MatMul that reads it (topological order kept)
        for name in node.input:
            source = name.removesuffix("_smoothed")
            if source != name and source in muls:
                model.graph.node.append(muls.pop(source))
        model.graph.node.append(node)
    return len(groups)
