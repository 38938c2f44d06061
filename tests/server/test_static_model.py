"""A static (token embedding bag) model served on /v1/embeddings: it has no token-id path, so the
server encodes whole texts, and answers as for any model."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

import munjang
from munjang import Normalize, SentenceEncoder
from munjang.modules import StaticEmbedding
from munjang.server.app import create_app
from munjang.server.settings import ServerSettings
from tests.helpers.server import LOCAL


@pytest.fixture(scope="module")
def static_encoder() -> SentenceEncoder:
    tokenizer = munjang.load_encoder().tokenizer
    return SentenceEncoder([StaticEmbedding(tokenizer, embedding_dim=16), Normalize()])


def test_static_model_embeds_and_checks_inputs(static_encoder: SentenceEncoder) -> None:
    client = TestClient(
        create_app(ServerSettings(models={"static": static_encoder})),
        raise_server_exceptions=False,
        base_url=LOCAL,
    )
    texts = ["a cat on the mat", "stocks fell"]
    r = client.post("/v1/embeddings", json={"model": "static", "input": texts})
    assert r.status_code == 200, r.text
    got = np.array([row["embedding"] for row in r.json()["data"]])
    np.testing.assert_allclose(got, static_encoder.encode(texts), atol=1e-6)
    assert r.json()["usage"]["prompt_tokens"] > 0
    assert client.post("/v1/embeddings", json={"model": "static", "input": [""]}).status_code == 400
    ids = static_encoder.tokenizer.encode("a cat on the mat", add_special_tokens=False).ids
    by_ids = client.post("/v1/embeddings", json={"model": "static", "input": ids})
    assert by_ids.status_code == 200, by_ids.text
    np.testing.assert_allclose(by_ids.json()["data"][0]["embedding"], got[0], atol=1e-6)
    bad = client.post("/v1/embeddings", json={"model": "static", "input": [10**9]})
    assert bad.status_code == 400 and "vocabulary" in bad.json()["error"]["message"]
