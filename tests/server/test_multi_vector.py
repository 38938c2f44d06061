"""POST /v1/multi_vector_embeddings and /v1/multi_vector_similarity: the Python API's token vectors and
MaxSim scores, and every bad request a 4xx JSON error naming the field (never a 500)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from munjang.encoders.multi_vector import load_multi_vector_encoder
from munjang.server import ServerSettings, create_app
from tests.helpers.multi_vector import st_multi_vector
from tests.helpers.server import LOCAL

KEY = {"Authorization": "Bearer k"}


@pytest.fixture(scope="module")
def colbert(tmp_path_factory: pytest.TempPathFactory):
    folder = st_multi_vector(Path(tmp_path_factory.mktemp("mv")) / "colbert")
    return load_multi_vector_encoder(folder, device="cpu")


def app_with(encoder, colbert, **limits):
    settings = ServerSettings(models={"mini": encoder}, multi_vector_models={"colbert": colbert}, api_key="k")
    for name, value in limits.items():
        setattr(settings, name, value)
    return create_app(settings)


@pytest.fixture(scope="module")
def client(encoder, colbert):
    with TestClient(app_with(encoder, colbert), base_url=LOCAL) as c:
        yield c


def test_token_vectors_match_the_python_api(client, colbert) -> None:
    texts = ["고양이는 포유류이다.", "Hello, world!"]
    for input_type, encode in (("document", colbert.encode_document), ("query", colbert.encode_query)):
        response = client.post(
            "/v1/multi_vector_embeddings", json={"input": texts, "input_type": input_type}, headers=KEY
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["model"] == "colbert" and [d["index"] for d in body["data"]] == [0, 1]
        for item, expected in zip(body["data"], encode(texts), strict=True):
            np.testing.assert_allclose(np.array(item["embedding"]), expected, atol=1e-6)
        assert body["usage"]["total_tokens"] == sum(len(m) for m in encode(texts))


def test_similarity_is_maxsim(client, colbert) -> None:
    docs = ["A cat, is an animal.", "Stocks fell."]
    response = client.post(
        "/v1/multi_vector_similarity", json={"query": "what is a cat?", "documents": docs}, headers=KEY
    )
    assert response.status_code == 200, response.text
    expected = colbert.similarity(colbert.encode_query(["what is a cat?"]), colbert.encode_document(docs))[0]
    np.testing.assert_allclose(response.json()["scores"], expected, atol=1e-5)


@pytest.mark.parametrize(
    ("route", "body", "status", "param"),
    [
        ("/v1/multi_vector_embeddings", {"input": []}, 400, "input"),
        ("/v1/multi_vector_embeddings", {"input": ["ok", " \u200b"]}, 400, "input[1]"),
        ("/v1/multi_vector_embeddings", {"input": "ok", "input_type": "passage"}, 422, "input_type"),
        ("/v1/multi_vector_embeddings", {"input": 3}, 422, "input"),
        ("/v1/multi_vector_embeddings", {"input": "ok", "model": "nope"}, 404, "model"),
        ("/v1/multi_vector_similarity", {"query": "", "documents": ["x"]}, 400, "query"),
        ("/v1/multi_vector_similarity", {"query": "q", "documents": []}, 400, "documents"),
        ("/v1/multi_vector_similarity", {"query": "q"}, 422, "documents"),
    ],
)
def test_bad_requests_are_4xx_naming_the_field(client, route, body, status, param) -> None:
    response = client.post(route, json=body, headers=KEY)
    assert response.status_code == status, response.text
    assert param in (response.json()["error"]["param"] or "")


def test_the_answer_size_is_bounded(encoder, colbert) -> None:
    with TestClient(app_with(encoder, colbert, max_multi_vector_values=500), base_url=LOCAL) as c:
        response = c.post("/v1/multi_vector_embeddings", json={"input": ["long text " * 30] * 3}, headers=KEY)
    assert response.status_code == 413 and response.json()["error"]["code"] == "response_too_large"


def test_without_a_multi_vector_model_the_routes_answer_404(encoder) -> None:
    app = create_app(ServerSettings(models={"mini": encoder}))
    with TestClient(app, base_url=LOCAL) as c:
        response = c.post("/v1/multi_vector_embeddings", json={"input": "x"})
    assert response.status_code == 404 and "--multi-vector-model" in response.json()["error"]["message"]
