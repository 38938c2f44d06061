"""Exported attention without the NaN guard: a finite mask value instead of -inf, and no IsNaN/Where.

torch's ONNX export of scaled-dot-product attention (what BERT, XLM-R and the other encoders here
run) masks padding keys by adding -inf to their scores, and then, because a row whose keys are all
masked would give 0/0, replaces NaN in the softmax's output by 0:

    scores + Where(mask, 0, -inf) -> Softmax -> Where(IsNaN(p), 0, p) -> MatMul with V

The guard costs two element-wise passes over every (batch, head, query, key) score (`bench/encode.py`
measures the end-to-end effect), for rows that only a batch row with no real token at all would
produce. With a finite mask value (-10000, the value BERT was trained with; exp underflows to exactly
0 for it in float32, bf16 and float16 alike) no row can be NaN, so the guard goes: real tokens get
the same numbers, and a batch row with no real token attends as if nothing were masked instead of
getting zeros, which pooling masks out anyway.

Only the exact pattern is rewritten; anything else (another exporter's graph, a custom attention) is
left as it is. `export_fp32` applies it before checking the graph against torch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

MASK_VALUE = -10000.0
_MASK_NAME = "munjang_attention_mask_value"


def _constants(model: Any) -> dict[str, Any]:
    """Tensor name -> TensorProto for every Constant node output and initializer (not converted: the
    weights are most of a model)."""
    tensors = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            tensors[node.output[0]] = node.attribute[0].t
    return tensors


def _is(tensors: dict[str, Any], name: str, test: Callable[[np.ndarray], Any]) -> bool:
    """Whether `name` is a small float constant for which `test(value)` holds."""
    from onnx import numpy_helper

    tensor = tensors.get(name)
    if tensor is None or int(np.prod(tensor.dims)) > 1:
        return False
    value = numpy_helper.to_array(tensor)
    return value.size == 1 and value.dtype.kind == "f" and bool(test(value))


def drop_nan_guards(model: Any) -> int:
    """Rewrite every guarded attention softmax of `model` (an onnx ModelProto, changed in place) as
    the module docstring says; the number of attention blocks rewritten."""
    from onnx import numpy_helper

    nodes = list(model.graph.node)
    producer = {out: node for node in nodes for out in node.output}
    consumers: dict[str, list[Any]] = defaultdict(list)
    for node in nodes:
        for name in node.input:
            consumers[name].append(node)
    values = _constants(model)
    graph_outputs = {o.name for o in model.graph.output}
    dropped: set[int] = set()
    renamed: dict[str, str] = {}
    masks: list[Any] = []
    for softmax in (n for n in nodes if n.op_type == "Softmax"):
        probs = softmax.output[0]
        users = consumers[probs]
        isnan = next((n for n in users if n.op_type == "IsNaN"), None)
        where = next((n for n in users if n.op_type == "Where" and isnan is not None), None)
        if isnan is None or where is None or len(users) != 2 or consumers[isnan.output[0]] != [where]:
            continue
        if list(where.input) != [isnan.output[0], where.input[1], probs] or not _is(
            values, where.input[1], lambda v: np.all(v == 0)
        ):
            continue
        add = producer.get(softmax.input[0])
        if add is None or add.op_type != "Add":
            continue
        wheres = [producer[i] for i in add.input if i in producer and producer[i].op_type == "Where"]
        mask = wheres[0] if len(wheres) == 1 else None
        if mask is None or not _is(values, mask.input[2], lambda v: np.all(np.isneginf(v))):
            continue
        if where.output[0] in graph_outputs:
            continue
        masks.append(mask)
        dropped.update((id(isnan), id(where)))
        renamed[where.output[0]] = probs
    if not renamed:
        return 0
    value = numpy_helper.from_array(np.array(MASK_VALUE, dtype=np.float32), _MASK_NAME)
    model.graph.initializer.append(value)
    for mask in masks:
        mask.input[2] = _MASK_NAME
    kept = [n for n in nodes if id(n) not in dropped]
    for node in kept:
        for i, name in enumerate(node.input):
            if name in renamed:
                node.input[i] = renamed[name]
    used = {name for node in kept for name in node.input} | graph_outputs
    kept = [n for n in kept if n.op_type != "Constant" or any(out in used for out in n.output)]
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return len(renamed)


def drop_nan_guards_in_file(path: Any) -> int:
    """`drop_nan_guards` on the single-file ONNX graph at `path`, saved back when anything changed."""
    import onnx

    model = onnx.load(str(path))
    count = drop_nan_guards(model)
    if count:
        onnx.save(model, str(path))
    return count
