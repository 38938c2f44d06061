"""LLM-era models over HTTP: /v1/rerank with a causal-LM reranker (instruction included) equals
`rank`, a collection reranks with it, /v1/embeddings reads a per-request instruction; bad input is a
4xx naming the field."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from munjang import load_cross_encoder, load_encoder
from munjang.server import ServerSettings, create_app
from tests.helpers.llm import tiny_decoder_embedder, tiny_llm_reranker
from tests.helpers.server import LOCAL

KEY = {"Authorization": "Bearer k"}
DOCS = [
    "한 남자가 기타를 친다.",
    "아이들이 공원에서 뛰어논다.",
    "서울은 한국의 수도이다.",
    "A man is playing a guitar.",
]
TASK = "Judge whether the document answers the query."
INSTRUCT = "Instruct: Given a web search query, retrieve relevant passages\nQuery: "
LIMIT = 200


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("llm")
    cross = load_cross_encoder(tiny_llm_reranker(root / "rr"), device="cpu")
    embedder = load_encoder(tiny_decoder_embedder(root / "emb"), device="cpu")
    return cross, embedder


@pytest.fixture(scope="module")
def client(models, tmp_path_factory):
    cross, embedder = models
    settings = ServerSettings(
        models={"qwen-emb": embedder},
        rerankers={"qwen-rr": cross},
        api_key="k",
        collections_dir=tmp_path_factory.mktemp("collections"),
        max_chars_per_input=LIMIT,
    )
    with TestClient(create_app(settings), base_url=LOCAL) as c:
        yield c


@pytest.mark.parametrize("instruction", [None, TASK])
def test_rerank_with_an_llm_reranker_equals_rank(client, models, instruction):
    cross, _ = models
    body = {"query": "기타 치는 사람", "documents": DOCS, "top_n": 3, "return_documents": True}
    if instruction:
        body["instruction"] = instruction
    response = client.post("/v1/rerank", json=body, headers=KEY)
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    expected = cross.rank("기타 치는 사람", DOCS, top_k=3, prompt=instruction)
    assert [r["index"] for r in results] == [h["corpus_id"] for h in expected]
    np.testing.assert_allclose(
        [r["relevance_score"] for r in results], [h["score"] for h in expected], atol=1e-6
    )
    assert results[0]["document"]["text"] == DOCS[expected[0]["corpus_id"]]


def test_embeddings_read_the_instruction_and_count_its_tokens(client, models):
    _, embedder = models
    plain = client.post("/v1/embeddings", json={"input": DOCS[:2]}, headers=KEY).json()
    instructed = client.post("/v1/embeddings", json={"input": DOCS[:2], "instruction": INSTRUCT}, headers=KEY)
    assert instructed.status_code == 200, instructed.text
    got = np.array([row["embedding"] for row in instructed.json()["data"]])
    np.testing.assert_allclose(got, embedder.encode(DOCS[:2], prompt=INSTRUCT), atol=1e-5)
    named = client.post(
        "/v1/embeddings", json={"input": DOCS[:2], "prompt_name": "query"}, headers=KEY
    ).json()
    np.testing.assert_allclose([r["embedding"] for r in named["data"]], got, atol=1e-6)  # the same text
    prompt_tokens = len(embedder.tokenizer(INSTRUCT, add_special_tokens=False)["input_ids"])
    assert (
        instructed.json()["usage"]["prompt_tokens"] >= plain["usage"]["prompt_tokens"] + 2 * prompt_tokens - 2
    )
    assert not np.allclose(got, [r["embedding"] for r in plain["data"]], atol=1e-3)


def test_a_collection_reranks_with_the_llm_reranker(client, models):
    cross, _ = models
    assert (
        client.post("/v1/collections", json={"name": "c", "model": "qwen-emb"}, headers=KEY).status_code
        == 201
    )
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(DOCS)]
    assert (
        client.post("/v1/collections/c/documents", json={"documents": docs}, headers=KEY).status_code == 200
    )
    body = {"query": "기타 치는 사람", "top_k": 4, "rerank": True, "rerank_k": 4, "mode": "dense"}
    response = client.post("/v1/collections/c/search", json=body, headers=KEY)
    assert response.status_code == 200, response.text
    got = [h["id"] for h in response.json()["data"]]
    expected = [f"d{h['corpus_id']}" for h in cross.rank("기타 치는 사람", DOCS)]
    assert got == expected


@pytest.mark.parametrize(
    "path,body,status,param",
    [
        ("/v1/rerank", {"query": "q", "texts": ["a"], "instruction": " "}, 400, "instruction"),
        ("/v1/rerank", {"query": "q", "texts": ["a"], "instruction": "x" * (LIMIT + 1)}, 400, "instruction"),
        ("/v1/rerank", {"query": "q", "texts": ["a"], "instruction": 3}, 422, "instruction"),
        ("/v1/rerank", {"query": "q" * (LIMIT + 1), "texts": ["a"]}, 400, "query"),
        ("/v1/rerank", {"query": "q", "texts": ["a", ""]}, 400, "texts[1]"),
        ("/v1/embeddings", {"input": "a", "instruction": "x" * (LIMIT + 1)}, 400, "instruction"),
        ("/v1/embeddings", {"input": "a", "instruction": "x", "prompt_name": "query"}, 400, "instruction"),
        ("/v1/embeddings", {"input": "a", "instruction": ["x"]}, 422, "instruction"),
    ],
)
def test_bad_requests_name_the_field(client, path, body, status, param):
    response = client.post(path, json=body, headers=KEY)
    assert response.status_code == status, response.text
    assert response.json()["error"]["param"] == param
