"""One lifecycle for torch's copy of the weights, encoders and cross-encoders alike: released while a
compiled graph holds its own, read back from the folder, checked by shape and checksum, so a folder
rewritten meanwhile is refused instead of silently becoming another model."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from transformers import AutoModel

import munjang
from munjang import load_cross_encoder
from munjang.inference.torch_weights import TorchWeights, checksum, same_checksum
from tests.helpers.training import tiny_bert

TEXTS = ["첫 문장을 인코딩한다.", "The weather is nice today."]


def small_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))


def copy_of(model: nn.Module):
    saved = {name: p.detach().clone() for name, p in model.named_parameters()}
    return lambda dtype: {name: t.to(dtype) for name, t in saved.items()}


def test_release_then_restore_gives_the_same_weights_and_checksums() -> None:
    model, weights = small_model(), TorchWeights()
    before = {name: (p.detach().clone(), checksum(p)) for name, p in model.named_parameters()}
    read = copy_of(model)
    weights.mark_from_folder(model)
    assert weights.from_folder(model) and not weights.is_released
    weights.release(model)
    assert weights.is_released and weights.released_count() == 4 * 3 + 3 + 3 * 2 + 2
    assert sum(p.numel() for p in model.parameters()) == 0
    assert weights.restore(model, read, "the folder")
    assert not weights.is_released and weights.from_folder(model)
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.detach(), before[name][0], rtol=0, atol=0)
        assert same_checksum(checksum(p), before[name][1])
    assert not weights.restore(model, read, "the folder")  # nothing released: a no-op


def test_a_changed_weight_is_detected() -> None:
    model, weights = small_model(), TorchWeights()
    weights.mark_from_folder(model)
    with torch.no_grad():
        model[0].bias[1] += 1e-3  # an edit after the read: no longer the folder's
    assert not weights.from_folder(model)
    weights.mark_from_folder(model)
    changed = copy.deepcopy(model)  # the "folder" holds other values now
    with torch.no_grad():
        changed[2].weight[0, 0] += 1e-3
    weights.release(model)
    message = r"the folder changed since its weights were released \(2.weight\)"
    with pytest.raises(RuntimeError, match=message):
        weights.restore(model, copy_of(changed), "the folder")
    assert weights.is_released  # nothing half-restored
    assert sum(p.numel() for p in model.parameters()) == 0
    other_shape = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 5))
    with pytest.raises(RuntimeError, match="changed since"):
        weights.restore(model, copy_of(other_shape), "the folder")


def test_sums_in_another_order_still_agree() -> None:
    value = checksum(torch.arange(1000, dtype=torch.float32) / 7)
    assert same_checksum(value, (value[0] * (1 + 1e-12), value[1]))
    assert not same_checksum(value, (value[0] + 1e-3, value[1]))


def test_a_cross_encoder_refuses_a_folder_rewritten_while_released(isolated_cache, tmp_path: Path) -> None:
    """The same lifecycle on a cross-encoder: released once its graph is compiled, refused once its
    folder holds other weights."""
    cross = load_cross_encoder(tiny_bert(tmp_path / "bert", dropout=0.0), head="native", device="cpu")
    cross.save(tmp_path / "cross")
    model = load_cross_encoder(tmp_path / "cross", device="cpu", backend="openvino")
    model.predict([("질의", "문서")])
    assert model.torch_weights.is_released
    hf = type(model.transformer.auto_model).from_pretrained(str(tmp_path / "cross"))
    with torch.no_grad():
        next(iter(hf.parameters()))[0, 0] += 0.5
    hf.save_pretrained(str(tmp_path / "cross"))
    with pytest.raises(RuntimeError, match="changed since its weights were released"):
        model.set_backend("torch")


def test_an_encoder_refuses_a_folder_rewritten_while_released(isolated_cache, tmp_path: Path) -> None:
    """The checksum check, which cross-encoders had, now guards encoders too."""
    folder = tiny_bert(tmp_path / "bert", dropout=0.0)
    encoder = munjang.load_encoder(folder, backend="onnx", precision="fp32")
    encoder.encode(TEXTS)
    assert encoder.release_torch_weights()
    model = AutoModel.from_pretrained(str(folder))
    with torch.no_grad():
        model.embeddings.word_embeddings.weight[5, 0] += 0.5
    model.save_pretrained(str(folder))
    with pytest.raises(RuntimeError, match="changed since its weights were released"):
        encoder.encode(TEXTS, backend="torch", precision="fp32")


def test_an_encoder_reads_back_what_it_released(isolated_cache, tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "bert", dropout=0.0)
    encoder = munjang.load_encoder(folder, backend="onnx", precision="fp32")
    held = {name: checksum(p) for name, p in encoder.transformer.auto_model.named_parameters()}
    exact = encoder.encode(TEXTS, backend="torch", precision="fp32")
    encoder.encode(TEXTS)
    assert encoder.release_torch_weights() and encoder.torch_weights.is_released
    assert encoder._parameter_count() == sum(
        shape.numel() for shape, _, _ in encoder.torch_weights.released.values()
    )
    np.testing.assert_array_equal(encoder.encode(TEXTS, backend="torch", precision="fp32"), exact)
    again = {name: checksum(p) for name, p in encoder.transformer.auto_model.named_parameters()}
    assert again == held


def test_weights_read_back_are_not_taken_for_trained_ones(isolated_cache, tmp_path: Path) -> None:
    """Read back, the weights hold the same values at new addresses: an exported graph built before
    stays in use when another model trains afterwards (it was rebuilt, as if trained)."""
    folder = tiny_bert(tmp_path / "bert", dropout=0.0)
    encoder = munjang.load_encoder(folder, backend="onnx", precision="fp32")
    graph = encoder.backend()
    assert encoder.release_torch_weights()
    encoder.encode(TEXTS, backend="torch", precision="fp32")  # read back
    assert not encoder.torch_weights.is_released
    other = nn.Linear(2, 2)
    optimizer = torch.optim.SGD(other.parameters(), lr=0.1)
    other(torch.ones(1, 2)).sum().backward()
    optimizer.step()  # another model's step: this one's weights did not change
    assert encoder.backend() is graph
    model = encoder.transformer.auto_model
    changed, _ = encoder.torch_weights.changed_since(encoder.torch_weights.record(model), model)
    assert not changed
    with torch.no_grad():
        next(iter(model.parameters())).add_(0.1)  # an in-place edit, then a step: changed
    optimizer.step()
    assert encoder.backend() is not graph


def test_changed_since_tells_steps_of_this_model_from_others() -> None:
    model, other, weights = small_model(), small_model(1), TorchWeights()
    record = weights.record(model)
    for net in (other, model):
        net(torch.ones(1, 4)).sum().backward()
    torch.optim.SGD(other.parameters(), lr=0.1).step()
    changed, record = weights.changed_since(record, model)
    assert not changed
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    assert weights.changed_since(record, model)[0]
