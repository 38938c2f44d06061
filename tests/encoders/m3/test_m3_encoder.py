"""bge-m3's three heads against FlagEmbedding's BGEM3FlagModel on a tiny random model saved in its layout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from munjang.encoders.m3.encoder import SPARSE_HEAD, combined_scores, is_m3_folder, load_m3_encoder
from munjang.errors import ModelLoadError
from tests.helpers.m3 import tiny_m3

TEXTS = [
    "The cat sits on the mat.",
    "A man is playing a guitar on stage tonight, loudly and happily.",
    "weather",
    "Stocks fell sharply after the announcement of new tariffs.",
]


@pytest.fixture(scope="module")
def m3_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_m3(tmp_path_factory.mktemp("m3"))


@pytest.fixture(scope="module")
def reference(m3_folder: Path) -> dict:
    flag = pytest.importorskip("FlagEmbedding")
    model = flag.BGEM3FlagModel(str(m3_folder), use_fp16=False, devices="cpu", normalize_embeddings=True)
    return model.encode(
        TEXTS, batch_size=2, max_length=64, return_dense=True, return_sparse=True, return_colbert_vecs=True
    )


def check_same(ours, reference: dict) -> None:
    np.testing.assert_allclose(ours.dense, reference["dense_vecs"], atol=1e-5)
    for mine, theirs in zip(ours.sparse, reference["lexical_weights"], strict=True):
        assert set(mine) == {int(t) for t in theirs}
        np.testing.assert_allclose([mine[int(t)] for t in theirs], list(theirs.values()), atol=1e-5)
    for mine, theirs in zip(ours.colbert, reference["colbert_vecs"], strict=True):
        assert mine.shape == theirs.shape
        np.testing.assert_allclose(mine, theirs, atol=1e-5)


def test_three_outputs_match_flagembedding(m3_folder: Path, reference: dict) -> None:
    model = load_m3_encoder(m3_folder)
    assert model.encoder.normalizes and model.colbert_dimension == 32
    check_same(model.encode(TEXTS, batch_size=3, max_length=64), reference)


def test_saved_folder_loads_in_flagembedding_and_here(
    m3_folder: Path, reference: dict, tmp_path: Path
) -> None:
    flag = pytest.importorskip("FlagEmbedding")
    load_m3_encoder(m3_folder).save(tmp_path / "copy")
    assert is_m3_folder(tmp_path / "copy") and (tmp_path / "copy" / "modules.json").exists()
    check_same(load_m3_encoder(tmp_path / "copy").encode(TEXTS, max_length=64), reference)
    theirs = flag.BGEM3FlagModel(str(tmp_path / "copy"), use_fp16=False, devices="cpu")
    again = theirs.encode(
        TEXTS, max_length=64, return_dense=True, return_sparse=True, return_colbert_vecs=True
    )
    np.testing.assert_allclose(again["dense_vecs"], reference["dense_vecs"], atol=1e-5)


def test_scores_match_flagembedding(m3_folder: Path, reference: dict) -> None:
    """Each score against FlagEmbedding's own per-pair functions on its own vectors. (Its batched
    `compute_score` lets padded passage tokens into ColBERT's max, so it is not the reference.)"""
    flag = pytest.importorskip("FlagEmbedding")
    model = load_m3_encoder(m3_folder)
    queries, docs = model.encode(TEXTS[:2], max_length=64), model.encode(TEXTS[2:], max_length=64)
    scores = combined_scores(queries, docs, weights=(0.4, 0.2, 0.4))
    theirs = flag.BGEM3FlagModel(str(m3_folder), use_fp16=False, devices="cpu")
    dense, lexical, colbert = reference["dense_vecs"], reference["lexical_weights"], reference["colbert_vecs"]
    for i in range(2):
        for j in range(2):
            parts = {
                "dense": float(dense[i] @ dense[2 + j]),
                "sparse": float(theirs.compute_lexical_matching_score(lexical[i], lexical[2 + j])),
                "colbert": float(theirs.colbert_score(colbert[i], colbert[2 + j])),
            }
            parts["combined"] = (0.4 * parts["dense"] + 0.2 * parts["sparse"] + 0.4 * parts["colbert"]) / 1.0
            for name, value in parts.items():
                assert scores[name][i, j] == pytest.approx(value, abs=1e-5), name


def test_one_output_alone_and_empty_input(m3_folder: Path) -> None:
    model = load_m3_encoder(m3_folder)
    only = model.encode(TEXTS, dense=False, colbert=False)
    assert only.dense is None and only.colbert is None and only.sparse is not None
    tokens = model.decode(only.sparse[0])
    assert any("cat" in t for t in tokens)
    empty = model.encode([])
    assert empty.dense is not None and empty.dense.shape == (0, 32) and empty.sparse == []


def test_not_an_m3_folder_or_a_broken_head(m3_folder: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="not a bge-m3"):
        load_m3_encoder(tmp_path)
    broken = tmp_path / "broken"
    load_m3_encoder(m3_folder).save(broken)
    (broken / SPARSE_HEAD).write_bytes(b"not a pickle")
    with pytest.raises(ModelLoadError, match="sparse_linear.pt"):
        load_m3_encoder(broken)
    torch.save(torch.nn.Linear(16, 1).state_dict(), broken / SPARSE_HEAD)
    with pytest.raises(ModelLoadError, match="32-d"):
        load_m3_encoder(broken)
