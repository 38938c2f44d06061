"""LangChain and LlamaIndex adapters: the vectors munjang gives, with the model's query/document
prompts, from a local encoder or through a server."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

import munjang
from munjang.server import ServerSettings, create_app

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")

from munjang.integrations.langchain import MunjangEmbeddings
from munjang.integrations.llama_index import MunjangEmbedding
from tests.helpers.server import LOCAL

DOCS = ["서울의 날씨가 맑다.", "Stocks fell sharply."]


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_langchain_local_and_server_agree_with_encode(encoder):
    local = MunjangEmbeddings(encoder)
    expected = unit(encoder.encode(DOCS))
    np.testing.assert_allclose(local.embed_documents(DOCS), expected, atol=1e-5)
    np.testing.assert_allclose(local.embed_query("날씨"), unit(encoder.encode("날씨")), atol=1e-5)
    assert local.embed_documents([]) == []
    app = create_app(ServerSettings(models={"mini": encoder}))
    with TestClient(app, base_url=LOCAL) as http:
        remote = MunjangEmbeddings(client=munjang.Client(http=http), model="mini")
        np.testing.assert_allclose(remote.embed_documents(DOCS), expected, atol=1e-5)
    with pytest.raises(ValueError, match="either a local encoder"):
        MunjangEmbeddings()


def test_prompts_follow_the_model(e5_path):
    e5 = munjang.load_encoder(e5_path, device="cpu")
    adapter = MunjangEmbeddings(e5)
    np.testing.assert_allclose(
        adapter.embed_query("서울 날씨"), unit(e5.encode("서울 날씨", prompt_name="query")), atol=1e-5
    )
    np.testing.assert_allclose(
        adapter.embed_documents(DOCS), unit(e5.encode(DOCS, prompt_name="passage")), atol=1e-5
    )


def test_llama_index_embedding(encoder):
    embedding = MunjangEmbedding(encoder=encoder)
    expected = unit(encoder.encode(DOCS))
    np.testing.assert_allclose(embedding.get_text_embedding_batch(DOCS), expected, atol=1e-5)
    np.testing.assert_allclose(embedding.get_query_embedding("날씨"), unit(encoder.encode("날씨")), atol=1e-5)
    assert embedding.class_name() == "MunjangEmbedding"
