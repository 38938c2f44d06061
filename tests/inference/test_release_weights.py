"""A model served on an exported backend frees torch's copy of its weights, and reads it back from
its folder, exactly, when a call needs torch again."""

from __future__ import annotations

import numpy as np

import munjang
from tests.helpers.training import tiny_bert

TEXTS = ["첫 문장을 인코딩한다.", "The weather is nice today.", "a longer sentence " * 12]


def test_released_weights_are_freed_and_read_back_exactly(isolated_cache, tmp_path):
    folder = tiny_bert(tmp_path / "bert", dropout=0.0)
    exact = munjang.load_encoder(folder, backend="torch", precision="fp32").encode(TEXTS)
    encoder = munjang.load_encoder(folder, backend="onnx", precision="fp32")
    before = encoder.encode(TEXTS)
    assert encoder.release_torch_weights()
    assert sum(p.numel() for p in encoder.transformer.auto_model.parameters()) == 0
    np.testing.assert_array_equal(encoder.encode(TEXTS), before)  # the exported backend needs none
    again = encoder.encode(TEXTS, backend="torch", precision="fp32")  # read back from the folder
    np.testing.assert_array_equal(again, exact)
    assert sum(p.numel() for p in encoder.transformer.auto_model.parameters()) > 0


def test_a_model_on_torch_keeps_its_weights(isolated_cache, tmp_path):
    encoder = munjang.load_encoder(
        tiny_bert(tmp_path / "bert", dropout=0.0), backend="torch", precision="fp32"
    )
    assert not encoder.release_torch_weights()
    assert sum(p.numel() for p in encoder.transformer.auto_model.parameters()) > 0
