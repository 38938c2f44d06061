"""SparseEncoder against sentence-transformers' SparseEncoder: inference-free SPLADE (Router with a
SparseStaticEmbedding for queries) in both directions, decode, similarity, max_active_dims, and the
errors a caller can make."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import munjang
from munjang import InputTooLongError, SparseEncoder
from munjang.encoders.sparse.encoder import sparse_rows
from munjang.modules import Router, SparseStaticEmbedding
from tests.helpers.sparse import TEXTS, st_inference_free, st_splade, tiny_mlm

pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def mlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_mlm(tmp_path_factory.mktemp("mlm") / "bert")


@pytest.fixture(scope="module")
def free_pair(mlm: Path, tmp_path_factory: pytest.TempPathFactory):
    reference = st_inference_free(mlm)
    folder = tmp_path_factory.mktemp("free") / "st"
    reference.save(str(folder))
    return reference, munjang.load_sparse_encoder(folder, device="cpu")


@pytest.fixture(scope="module")
def splade_pair(mlm: Path, tmp_path_factory: pytest.TempPathFactory):
    reference = st_splade(mlm)
    folder = tmp_path_factory.mktemp("splade") / "st"
    reference.save(str(folder))
    return reference, munjang.load_sparse_encoder(folder, device="cpu")


def close(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(
        a.to_dense() if a.is_sparse else a, b.to_dense() if b.is_sparse else b, atol=1e-5, rtol=0
    )


def test_inference_free_routes_match_the_reference(free_pair) -> None:
    reference, ours = free_pair
    assert isinstance(ours.router, Router) and isinstance(ours.route("query")[0], SparseStaticEmbedding)
    assert ours.describe()["inference_free_queries"] and ours.describe()["routes"] == ["query", "document"]
    close(ours.encode_query(TEXTS), reference.encode_query(TEXTS))
    close(ours.encode_document(TEXTS), reference.encode_document(TEXTS))
    close(ours.encode(TEXTS), reference.encode(TEXTS))  # no task: the default ("document") route
    query = ours.encode_query("the cat sat on the mat").to_dense()
    ids = ours.tokenizer("the cat sat on the mat", add_special_tokens=False)["input_ids"]
    assert set(torch.nonzero(query).flatten().tolist()) == set(ids)  # one weight per distinct query token


def test_inference_free_save_loads_in_the_reference(free_pair, tmp_path: Path) -> None:
    from sentence_transformers import SparseEncoder as STSparseEncoder

    _, ours = free_pair
    ours.save(tmp_path / "ours")
    config = json.loads((tmp_path / "ours" / "router_config.json").read_text())
    assert config["structure"]["query"] == ["query_0_SparseStaticEmbedding"]
    assert config["structure"]["document"] == ["document_0_MLMTransformer", "document_1_SpladePooling"]
    reference = STSparseEncoder(str(tmp_path / "ours"), device="cpu")
    close(reference.encode_query(TEXTS), ours.encode_query(TEXTS))
    close(reference.encode_document(TEXTS), ours.encode_document(TEXTS))
    again = munjang.load_sparse_encoder(tmp_path / "ours", device="cpu")
    close(again.encode_query(TEXTS), ours.encode_query(TEXTS))


def test_decode_similarity_and_active_dims_match_the_reference(splade_pair) -> None:
    reference, ours = splade_pair
    ref_vectors, our_vectors = reference.encode(TEXTS), ours.encode(TEXTS)
    for got, want in zip(
        ours.decode(our_vectors, top_k=5), reference.decode(ref_vectors, top_k=5), strict=True
    ):
        assert [t for t, _ in got] == [t for t, _ in want]
        np.testing.assert_allclose([w for _, w in got], [w for _, w in want], atol=1e-5)
    close(
        ours.similarity(our_vectors, ours.encode(TEXTS[:2])),
        reference.similarity(ref_vectors, reference.encode(TEXTS[:2])),
    )
    close(ours.encode(TEXTS, max_active_dims=4), reference.encode(TEXTS, max_active_dims=4))
    assert all(len(ids) <= 4 for ids, _ in sparse_rows(ours.encode(TEXTS, max_active_dims=4)))


def test_token_weights_are_the_non_zero_entries(splade_pair) -> None:
    _, ours = splade_pair
    vector = ours.encode(TEXTS[0])
    weights = ours.token_weights(vector)[0]
    ids, values = sparse_rows(vector)[0]
    assert len(weights) == len(ids) > 0
    assert weights == dict(
        zip(ours.tokenizer.convert_ids_to_tokens(ids.tolist()), values.tolist(), strict=True)
    )


def test_batching_does_not_change_vectors(splade_pair) -> None:
    _, ours = splade_pair
    whole = ours.encode(TEXTS).to_dense()
    close(ours.encode(TEXTS, batch_size=1), whole)
    close(ours.encode(TEXTS, max_tokens=16), whole)
    close(ours.encode(TEXTS[1]), whole[1])


def test_bad_calls_name_the_problem(free_pair) -> None:
    _, ours = free_pair
    with pytest.raises(ValueError, match="no route for task 'passage'"):
        ours.encode(TEXTS, task="passage")
    with pytest.raises(ValueError, match="max_active_dims"):
        ours.encode(TEXTS, max_active_dims=0)
    with pytest.raises(TypeError, match=r"sentences\[1\] is int"):
        ours.encode(["a", 1])  # type: ignore[list-item]
    with pytest.raises(InputTooLongError, match=r"sentences\[0\] has \d+ tokens"):
        ours.encode_document(["cat " * 100], truncate=False)
    with pytest.raises(ValueError, match="start with an MLMTransformer"):
        SparseEncoder([ours.route("document")[1]])
