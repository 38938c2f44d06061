"""munjang.Client against a real app (FastAPI's TestClient is an httpx.Client): the same vectors,
scores and hits as the Python API, and server errors raised with their field."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

import munjang
from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL


@pytest.fixture()
def client(encoder, tmp_path):
    app = create_app(ServerSettings(models={"mini": encoder}, api_key="k", collections_dir=tmp_path))
    with TestClient(app, base_url=LOCAL) as http:
        yield munjang.Client(api_key="k", http=http)


def test_embed_and_similarity_match_the_python_api(client, encoder):
    texts = ["서울 날씨", "Seoul weather", "주식 급락"]
    np.testing.assert_allclose(client.embed(texts), encoder.encode(texts), atol=1e-6)
    assert client.embed("하나").shape == (encoder.get_embedding_dimension(),)
    assert client.embed(texts, dimensions=8).shape == (3, 8)
    vectors = encoder.encode(texts)
    np.testing.assert_allclose(
        client.similarity(texts[0], texts[1:]), encoder.similarity(vectors[:1], vectors[1:])[0], atol=1e-5
    )
    assert client.models() == ["mini"]


def test_collections_round_trip(client):
    client.create_collection("news")
    docs = [{"id": "a", "text": "cats sleep on the sofa"}, {"id": "b", "text": "stocks fell sharply"}]
    assert client.add("news", docs)["added"] == 2
    assert client.search("news", "a sleeping cat", top_k=1, mode="dense")[0]["id"] == "a"
    assert client.delete("news", ["b"]) == 1
    assert client.collection_info("news")["documents"] == 1
    assert [c["name"] for c in client.collections()] == ["news"]
    client.drop_collection("news")
    assert client.collections() == []
    with pytest.raises(munjang.ServerError, match="404"):
        client.drop_collection("news")


def test_server_errors_carry_status_and_field(client, encoder):
    with pytest.raises(munjang.ServerError) as error:
        client.embed([])
    assert error.value.status == 400 and error.value.param == "input"
    with pytest.raises(munjang.ServerError, match="404") as missing:
        client.search("nope", "q")
    assert missing.value.param == "name"
    unauthorized = munjang.Client(http=client.http.__class__(client.http.app, base_url=LOCAL))
    with pytest.raises(munjang.ServerError) as denied:
        unauthorized.embed("x")
    assert denied.value.status == 401
