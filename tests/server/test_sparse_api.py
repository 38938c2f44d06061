"""POST /v1/sparse_embeddings: vectors equal the Python API (query side, document side, default,
top_k), and every bad request is a 4xx JSON error naming the field, never a 500."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from munjang import load_sparse_encoder
from munjang.encoders.sparse.encoder import sparse_rows
from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL
from tests.helpers.sparse import munjang_splade

TEXTS = ["the cat sat on the mat", "서울 에 비 가 온다"]


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory):
    return load_sparse_encoder(
        munjang_splade(tmp_path_factory.mktemp("s") / "m", inference_free=True), device="cpu"
    )


@pytest.fixture(scope="module")
def client(encoder, sparse):
    settings = ServerSettings(
        models={"mini": encoder},
        sparse_models={"splade": sparse},
        max_inputs_per_request=4,
        max_chars_per_input=300,
    )
    with TestClient(create_app(settings), base_url=LOCAL) as c:
        yield c


@pytest.mark.parametrize("task", ["query", "document", None])
def test_vectors_equal_the_python_api(client, sparse, task) -> None:
    body = {"input": TEXTS, "return_tokens": True} | ({"task": task} if task else {})
    response = client.post("/v1/sparse_embeddings", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["model"] == "splade" and [d["index"] for d in answer["data"]] == [0, 1]
    encode = {"query": sparse.encode_query, "document": sparse.encode_document}.get(task, sparse.encode)
    for item, (ids, values) in zip(answer["data"], sparse_rows(encode(TEXTS)), strict=True):
        assert item["indices"] == ids.tolist()
        np.testing.assert_allclose(item["values"], values, rtol=1e-6)
        assert item["tokens"] == sparse.tokenizer.convert_ids_to_tokens(ids.tolist())


def test_top_k_keeps_the_largest_weights_best_first(client, sparse) -> None:
    response = client.post("/v1/sparse_embeddings", json={"input": TEXTS[0], "task": "document", "top_k": 3})
    item = response.json()["data"][0]
    assert len(item["indices"]) == 3 and item["values"] == sorted(item["values"], reverse=True)
    top = sparse.decode(sparse.encode_document(TEXTS[0]), top_k=3)
    assert item["indices"] == sparse.tokenizer.convert_tokens_to_ids([t for t, _ in top])


@pytest.mark.parametrize(
    "body,status,param",
    [
        ({}, 422, "input"),
        ({"input": 5}, 422, "input"),
        ({"input": [1, 2]}, 422, "input"),
        ({"input": []}, 400, "input"),
        ({"input": ["ok", " \u200b "]}, 400, "input[1]"),
        ({"input": ["a"] * 5}, 400, "input"),
        ({"input": "a" * 301}, 400, "input[0]"),
        ({"input": "a", "model": "nope"}, 404, "model"),
        ({"input": "a", "task": "passage"}, 422, "task"),
        ({"input": "a", "top_k": 0}, 400, "top_k"),
        ({"input": "a", "top_k": "3"}, 422, "top_k"),
        ({"input": "a", "return_tokens": "yes"}, 422, "return_tokens"),
        ({"input": "cat " * 70, "truncate": False}, 400, "input"),
    ],
)
def test_bad_requests_are_4xx_naming_the_field(client, body, status, param) -> None:
    response = client.post("/v1/sparse_embeddings", json=body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["param"] == param


def test_bodies_that_are_not_objects_and_servers_without_a_sparse_model(client, encoder) -> None:
    for raw in (b"{not json", b"[1, 2]"):
        response = client.post(
            "/v1/sparse_embeddings", content=raw, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 400 and "error" in response.json()
    with TestClient(create_app(ServerSettings(models={"mini": encoder})), base_url=LOCAL) as plain:
        response = plain.post("/v1/sparse_embeddings", json={"input": "a"})
        assert response.status_code == 404 and "--sparse-model" in response.json()["error"]["message"]


def test_collections_search_in_sparse_mode(encoder, sparse, tmp_path) -> None:
    from munjang.search.collection.collection import Collection

    with_sparse = Collection.create(
        tmp_path / "with",
        encoder=encoder,
        tokenizer="word",
        sparse_model=sparse.model_folder,
        sparse_encoder=sparse,
    )
    with_sparse.add(["a", "b"], TEXTS)
    want = [(h.id, h.score) for h in with_sparse.search("cat mat", k=2, mode="sparse")]
    with_sparse.close()
    Collection.create(tmp_path / "plain", encoder=encoder, tokenizer="word").close()
    paths = {"with": tmp_path / "with", "plain": tmp_path / "plain"}
    app = create_app(
        ServerSettings(models={"mini": encoder}, sparse_models={"splade": sparse}, collection_paths=paths)
    )
    with TestClient(app, base_url=LOCAL) as c:
        response = c.post(
            "/v1/collections/with/search", json={"query": "cat mat", "top_k": 2, "mode": "sparse"}
        )
        assert response.status_code == 200, response.text
        got = [(d["id"], d["score"]) for d in response.json()["data"]]
        assert [i for i, _ in got] == [i for i, _ in want]
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-5)
        hybrid = c.post("/v1/collections/with/search", json={"query": "cat", "weights": [1, 1, 1]})
        assert hybrid.status_code == 200 and "sparse" in hybrid.json()["data"][0]["scores"]
        bad = c.post("/v1/collections/with/search", json={"query": "cat", "weights": [1, 1]})
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "weights"
        plain = c.post("/v1/collections/plain/search", json={"query": "cat", "mode": "sparse"})
        assert plain.status_code == 400 and plain.json()["error"]["param"] == "mode"
