"""POST /v1/similarity, /v1/tokenize and /v1/rerank: results equal the Python API, and bad requests
are 4xx errors naming the field."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from munjang import load_cross_encoder
from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL
from tests.helpers.training import tiny_bert

KEY = {"Authorization": "Bearer k"}


@pytest.fixture(scope="module")
def cross(tmp_path_factory):
    return load_cross_encoder(tiny_bert(tmp_path_factory.mktemp("tiny"), dropout=0.0), device="cpu")


@pytest.fixture(scope="module")
def client(encoder, cross):
    app = create_app(ServerSettings(models={"mini": encoder}, rerankers={"tiny-ce": cross}, api_key="k"))
    with TestClient(app, base_url=LOCAL) as c:
        yield c


def test_similarity_matches_the_python_api(client, encoder):
    body = {"inputs": {"source_sentence": "서울 날씨", "sentences": ["오늘 서울은 맑다.", "Stocks fell."]}}
    response = client.post("/v1/similarity", json=body, headers=KEY)
    assert response.status_code == 200, response.text
    vectors = encoder.encode(["서울 날씨", "오늘 서울은 맑다.", "Stocks fell."])
    expected = encoder.similarity(vectors[:1], vectors[1:])[0]
    np.testing.assert_allclose(response.json(), expected, atol=1e-5)


def test_tokenize_gives_ids_text_and_offsets(client, encoder):
    response = client.post("/v1/tokenize", json={"inputs": ["Hello world", "안녕"]}, headers=KEY)
    assert response.status_code == 200, response.text
    first = response.json()[0]
    ids = encoder.tokenizer("Hello world")["input_ids"]
    assert [t["id"] for t in first] == ids
    assert first[0]["special"] and first[-1]["special"] and not first[1]["special"]
    assert "Hello world"[first[1]["start"] : first[1]["stop"]].lower() == first[1]["text"]
    bare = client.post("/v1/tokenize", json={"inputs": "Hello", "add_special_tokens": False}, headers=KEY)
    assert [t["special"] for t in bare.json()[0]] == [False]


def test_rerank_matches_cross_encoder_rank_in_both_shapes(client, cross):
    docs = ["A person plays an instrument.", "It rains.", "남자가 악기를 연주한다."]
    expected = cross.rank("A man is playing a guitar.", docs, top_k=2)
    tei = client.post(
        "/v1/rerank", json={"query": "A man is playing a guitar.", "texts": docs, "top_n": 2}, headers=KEY
    ).json()
    assert [r["index"] for r in tei["results"]] == [h["corpus_id"] for h in expected]
    np.testing.assert_allclose([r["relevance_score"] for r in tei["results"]], [h["score"] for h in expected])
    cohere = client.post(
        "/v1/rerank",
        json={
            "query": "A man is playing a guitar.",
            "documents": [{"text": d} for d in docs],
            "return_documents": True,
            "model": "tiny-ce",
        },
        headers=KEY,
    ).json()
    assert cohere["model"] == "tiny-ce" and len(cohere["results"]) == 3
    assert cohere["results"][0]["document"]["text"] == docs[expected[0]["corpus_id"]]


@pytest.mark.parametrize(
    "path,body,status,param",
    [
        ("/v1/similarity", {"inputs": {"source_sentence": "a", "sentences": []}}, 400, "inputs.sentences"),
        (
            "/v1/similarity",
            {"inputs": {"source_sentence": "", "sentences": ["b"]}},
            400,
            "inputs.source_sentence",
        ),
        ("/v1/similarity", {"inputs": {"source_sentence": "a"}}, 422, "inputs.sentences"),
        (
            "/v1/similarity",
            {"inputs": {"source_sentence": "a", "sentences": ["b"]}, "model": "x"},
            404,
            "model",
        ),
        ("/v1/tokenize", {"inputs": []}, 400, "inputs"),
        ("/v1/tokenize", {"inputs": 3}, 422, "inputs"),
        ("/v1/rerank", {"query": "q", "texts": []}, 400, "texts"),
        ("/v1/rerank", {"query": "q", "texts": ["a"], "documents": ["b"]}, 400, "documents"),
        ("/v1/rerank", {"query": "q"}, 422, "documents"),
        ("/v1/rerank", {"query": "q", "texts": ["a"], "top_n": 0}, 400, "top_n"),
        ("/v1/rerank", {"query": "q", "texts": ["a"], "model": "nope"}, 404, "model"),
        ("/v1/rerank", {"texts": ["a"]}, 422, "query"),
        ("/v1/rerank", {"query": " ", "texts": ["a"]}, 400, "query"),
    ],
)
def test_bad_requests_name_the_field(client, path, body, status, param):
    response = client.post(path, json=body, headers=KEY)
    assert response.status_code == status, response.text
    assert response.json()["error"]["param"] == param


def test_routes_need_the_key_and_rerank_needs_a_reranker(client, encoder):
    assert client.post("/v1/tokenize", json={"inputs": "a"}).status_code == 401
    app = create_app(ServerSettings(models={"mini": encoder}))
    with TestClient(app, base_url=LOCAL) as plain:
        response = plain.post("/v1/rerank", json={"query": "q", "texts": ["a"]})
    assert response.status_code == 404 and "no reranker" in response.json()["error"]["message"]


def test_a_rerank_of_100k_character_texts_answers_in_bounded_memory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 70's first crash: one ~200 KB rerank (a 100,000-character query and document) grew the
    server to 8.4 GB, the next was killed at 14 GB. The route's peak RSS growth, in a fresh
    process (a test process's peak is anyone's), stays under 300 MB, and the pair is scored."""
    import os
    import subprocess
    import sys

    from tests.helpers.processes import ROOT

    code = """
import resource, sys
from pathlib import Path
from fastapi.testclient import TestClient
from munjang import load_cross_encoder, load_encoder
from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL
from tests.helpers.training import tiny_bert
cross = load_cross_encoder(tiny_bert(Path(sys.argv[1])), device="cpu")
app = create_app(ServerSettings(models={"mini": load_encoder(device="cpu")}, rerankers={"ce": cross}))
long = " ".join(f"tok{i}" for i in range(14_000))[:100_000]  # the longest input allowed
with TestClient(app, base_url=LOCAL) as http:
    assert http.post("/v1/rerank", json={"query": "q", "texts": ["a"]}).status_code == 200
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    answer = http.post("/v1/rerank", json={"query": long, "texts": [long, "short"]})
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024
print(len(long), answer.status_code, len(answer.json()), grown)
"""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    run = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "tiny")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    chars, status, hits, grown_mb = map(int, run.stdout.split())
    assert chars == 100_000 and status == 200 and hits == 2
    assert grown_mb < 300, run.stdout
