"""The NaN guard after attention softmax goes, and a finite mask value replaces -inf: the same numbers at
real tokens, finite ones on an all-padding row, and graphs of another shape left as they are."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import munjang
from munjang.inference.artifacts import manifest_path
from munjang.inference.attention_masks import MASK_VALUE, drop_nan_guards
from munjang.inference.base import onnxruntime_module
from munjang.inference.onnx_export import onnx_artifact, run_onnx

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def cache(isolated_cache: Path) -> Path:
    return isolated_cache


def guarded_attention(fill: float = 0.0) -> onnx.ModelProto:
    """scores + Where(mask, 0, -inf) -> Softmax -> Where(IsNaN(p), fill, p) -> Identity, as torch exports."""
    const = lambda name, value: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=helper.make_tensor(name, TensorProto.FLOAT, [], [value])
    )
    nodes = [
        const("zero", 0.0),
        const("neg_inf", float("-inf")),
        const("fill", fill),
        helper.make_node("Where", ["mask", "zero", "neg_inf"], ["additive"]),
        helper.make_node("Add", ["scores", "additive"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
        helper.make_node("IsNaN", ["probs"], ["nan"]),
        helper.make_node("Where", ["nan", "fill", "probs"], ["guarded"]),
        helper.make_node("Identity", ["guarded"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "attention",
        [
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, 3]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run(model: onnx.ModelProto, scores: np.ndarray, mask: np.ndarray) -> np.ndarray:
    ort = onnxruntime_module()
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(["out"], {"scores": scores, "mask": mask})[0])


def test_the_guard_goes_and_real_rows_keep_their_numbers() -> None:
    scores = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]], dtype=np.float32)
    mask = np.array([[True, True, False], [False, False, False]])
    model = guarded_attention()
    before = run(model, scores, mask)
    assert drop_nan_guards(model) == 1
    ops = [n.op_type for n in model.graph.node]
    assert "IsNaN" not in ops and ops.count("Where") == 1
    values = [float(onnx.numpy_helper.to_array(t)) for t in model.graph.initializer]
    assert values == [MASK_VALUE]
    onnx.checker.check_model(model)
    after = run(model, scores, mask)
    np.testing.assert_allclose(after[0], before[0], rtol=0, atol=1e-7)  # the row with real keys
    assert np.all(before[1] == 0)  # all keys masked: the guard's zeros ...
    unmasked = np.exp(scores[1] - scores[1].max())
    np.testing.assert_allclose(after[1], unmasked / unmasked.sum(), atol=1e-6)  # ... now finite weights


def test_other_shapes_are_left_as_they_are() -> None:
    other_fill = guarded_attention(fill=0.5)  # not the guard torch writes
    assert drop_nan_guards(other_fill) == 0
    assert [n.op_type for n in other_fill.graph.node].count("IsNaN") == 1
    finite_mask = guarded_attention()
    for node in finite_mask.graph.node:  # a mask that is already finite needs no rewrite
        if node.output[0] == "neg_inf":
            node.attribute[0].t.CopyFrom(helper.make_tensor("neg_inf", TensorProto.FLOAT, [], [-1e9]))
    assert drop_nan_guards(finite_mask) == 0


def test_exported_minilm_has_no_guards_and_stays_finite_on_an_all_padding_row() -> None:
    transformer = munjang.load_encoder(None, device="cpu").transformer
    path = onnx_artifact(transformer, None, "fp32")
    manifest = json.loads(manifest_path(path).read_text())
    assert manifest["nan_guards_dropped"] == 6  # one per layer
    assert "IsNaN" not in {n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node}
    batch = dict(transformer.collate(transformer.tokenize(["A man plays a guitar.", "Hi"]), [0, 1]))
    batch["attention_mask"][1] = 0  # a row with no real token at all
    out = run_onnx(path, batch)
    assert np.isfinite(out).all()
    with torch.inference_mode():
        reference = transformer.auto_model(**batch).last_hidden_state[0].numpy()
    real = batch["attention_mask"][0].bool().numpy()
    np.testing.assert_allclose(out[0][real], reference[real], atol=1e-4)
