"""SPLADE modules against sentence-transformers' SparseEncoder: a tiny random BERT-for-MaskedLM saved by
the reference loads in munjang with the same sparse vectors, and what munjang saves the reference
loads with the same vectors again (MLM + SpladePooling, each pooling and activation)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import munjang
from munjang.errors import ModelLoadError
from munjang.modules import MLMTransformer, SpladePooling
from munjang.modules.splade_pooling import splade_pool
from tests.helpers.sparse import TEXTS, st_splade, tiny_mlm

pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def mlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_mlm(tmp_path_factory.mktemp("mlm") / "bert")


def dense(x: torch.Tensor) -> torch.Tensor:
    return x.to_dense() if x.is_sparse else x


@pytest.mark.parametrize(("pooling", "activation"), [("max", "relu"), ("sum", "relu"), ("max", "log1p_relu")])
def test_reference_folder_loads_with_the_same_vectors(
    mlm: Path, tmp_path: Path, pooling: str, activation: str
) -> None:
    reference = st_splade(mlm, pooling, activation)
    reference.save(str(tmp_path / "st"))
    ours = munjang.load_sparse_encoder(tmp_path / "st", device="cpu")
    assert isinstance(ours.route()[0], MLMTransformer)
    splade = ours.route()[1]
    assert isinstance(splade, SpladePooling)
    assert (splade.pooling_strategy, splade.activation_function) == (pooling, activation)
    expected = dense(reference.encode(TEXTS))
    got = ours.encode(TEXTS)
    assert got.is_sparse and got.shape == expected.shape
    torch.testing.assert_close(got.to_dense(), expected, atol=1e-5, rtol=0)
    assert 0 < int((expected[0] > 0).sum()) < expected.shape[1]  # some tokens off: a real sparsity pattern


def test_saved_folder_loads_in_the_reference(mlm: Path, tmp_path: Path) -> None:
    from sentence_transformers import SparseEncoder

    ours = munjang.load_sparse_encoder(mlm, device="cpu")  # a plain MLM folder: max SPLADE pooling
    ours.save(tmp_path / "ours")
    modules = json.loads((tmp_path / "ours" / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["MLMTransformer", "SpladePooling"]
    config = json.loads((tmp_path / "ours" / "1_SpladePooling" / "config.json").read_text())
    assert config["pooling_strategy"] == "max" and "word_embedding_dimension" in config
    reference = SparseEncoder(str(tmp_path / "ours"), device="cpu")
    torch.testing.assert_close(
        dense(reference.encode(TEXTS)), ours.encode(TEXTS).to_dense(), atol=1e-5, rtol=0
    )
    again = munjang.load_sparse_encoder(tmp_path / "ours", device="cpu")
    torch.testing.assert_close(again.encode(TEXTS).to_dense(), ours.encode(TEXTS).to_dense(), atol=0, rtol=0)


def test_splade_pool_masks_padding_and_matches_the_formula() -> None:
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 7)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    got = splade_pool(logits, mask, "sum", "relu")
    expected = torch.stack(
        [torch.log1p(torch.relu(logits[0])).sum(0), torch.log1p(torch.relu(logits[1, :2])).sum(0)]
    )
    torch.testing.assert_close(got, expected)
    logits[1, 2:] = 100.0  # padding: must not change the max
    assert torch.equal(splade_pool(logits, mask, "max")[1], torch.log1p(torch.relu(logits[1, :2])).amax(0))


def test_bad_pooling_config_names_the_file(mlm: Path, tmp_path: Path) -> None:
    st_splade(mlm).save(str(tmp_path / "st"))
    config = tmp_path / "st" / "1_SpladePooling" / "config.json"
    config.write_text(json.dumps({"pooling_strategy": "mean"}))
    with pytest.raises(ModelLoadError, match="1_SpladePooling.*pooling_strategy"):
        munjang.load_sparse_encoder(tmp_path / "st", device="cpu")


def test_dense_loader_points_to_the_sparse_one(mlm: Path, tmp_path: Path) -> None:
    st_splade(mlm).save(str(tmp_path / "st"))
    with pytest.raises(ModelLoadError, match="load_sparse_encoder"):
        munjang.load_encoder(tmp_path / "st", device="cpu")
