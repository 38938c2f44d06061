"""bge-m3's heads through the sparse and multi-vector doors: the loaders, the server routes and a
collection's sparse retriever take a bge-m3 folder and give what M3Encoder gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from munjang import InputTooLongError, load_m3_encoder, load_multi_vector_encoder, load_sparse_encoder
from munjang.encoders.m3.encoder import colbert_scores
from munjang.encoders.m3.views import M3MultiVectorView, M3SparseView
from munjang.encoders.sparse.encoder import sparse_rows
from munjang.search.collection.collection import Collection
from munjang.server import ServerSettings, create_app
from tests.helpers.m3 import tiny_m3
from tests.helpers.server import LOCAL

TEXTS = ["the cat sat on the mat", "stocks fell sharply", "a dog in the rain"]


@pytest.fixture(scope="module")
def m3_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_m3(tmp_path_factory.mktemp("m3"))


def test_sparse_view_gives_the_lexical_weights(m3_folder: Path) -> None:
    view = load_sparse_encoder(m3_folder)
    assert isinstance(view, M3SparseView)
    expected = load_m3_encoder(m3_folder).encode(TEXTS, dense=False, colbert=False).sparse
    assert expected is not None
    for (ids, values), want in zip(sparse_rows(view.encode_document(TEXTS)), expected, strict=True):
        assert dict(zip(ids.tolist(), values.tolist(), strict=True)) == pytest.approx(want, abs=1e-6)
    top = sparse_rows(view.encode_query(TEXTS[:1], max_active_dims=2))[0][1]
    assert len(top) == 2 and set(top.tolist()) == set(sorted(expected[0].values())[-2:])
    assert view.encode("one text").ndim == 1
    with pytest.raises(InputTooLongError, match="sentences\\[0\\]"):
        view.encode(["word " * 500], truncate=False)


def test_multi_vector_view_gives_the_colbert_vectors(m3_folder: Path) -> None:
    view = load_multi_vector_encoder(m3_folder)
    assert isinstance(view, M3MultiVectorView) and view.get_embedding_dimension() == 32
    expected = load_m3_encoder(m3_folder).encode(TEXTS, dense=False, sparse=False).colbert
    assert expected is not None
    for got, want in zip(view.encode_document(TEXTS), expected, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-6)
    scores = view.similarity(view.encode_query(TEXTS[:1]), view.encode_document(TEXTS))
    np.testing.assert_allclose(scores, colbert_scores(expected[:1], expected), atol=1e-6)


def test_server_serves_bge_m3_on_the_sparse_and_multi_vector_routes(encoder, m3_folder: Path) -> None:
    sparse, multi = load_sparse_encoder(m3_folder), load_multi_vector_encoder(m3_folder)
    settings = ServerSettings(
        models={"mini": encoder}, sparse_models={"m3": sparse}, multi_vector_models={"m3": multi}
    )
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        r = client.post("/v1/sparse_embeddings", json={"input": TEXTS, "return_tokens": True})
        assert r.status_code == 200, r.text
        want = sparse_rows(sparse.encode(TEXTS))
        for item, (ids, values) in zip(r.json()["data"], want, strict=True):
            assert item["indices"] == ids.tolist() and item["values"] == pytest.approx(
                values.tolist(), abs=1e-6
            )
            assert len(item["tokens"]) == len(ids)
        r = client.post("/v1/multi_vector_similarity", json={"query": TEXTS[0], "documents": TEXTS})
        assert r.status_code == 200, r.text
        assert r.json()["scores"] == pytest.approx(
            multi.similarity(multi.encode_query(TEXTS[:1]), multi.encode_document(TEXTS))[0].tolist(),
            abs=1e-5,
        )
        assert client.post("/v1/sparse_embeddings", json={"input": []}).status_code == 400
        assert client.post("/v1/multi_vector_embeddings", json={"input": 7}).status_code in (400, 422)


def test_a_collection_keeps_dense_lexical_and_bge_m3_sparse(tmp_path: Path, m3_folder: Path) -> None:
    collection = Collection.create(
        tmp_path / "c", model=str(m3_folder), tokenizer="word", sparse_model=m3_folder
    )
    collection.add(["a", "b", "c"], TEXTS)
    collection.close()
    reopened = Collection.open(tmp_path / "c")
    view = load_sparse_encoder(m3_folder)
    scores = view.encode_query(["cat on a mat"]).to_dense() @ view.encode_document(TEXTS).to_dense().T
    best = ["a", "b", "c"][int(scores.argmax())]
    hits = reopened.search("cat on a mat", k=3, mode="sparse")
    assert hits[0].id == best and hits[0].score == pytest.approx(float(scores.max()), abs=1e-5)
    assert {h.id for h in reopened.search("cat on a mat", k=3, mode="hybrid")} == {"a", "b", "c"}
    reopened.close()
