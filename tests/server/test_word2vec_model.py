"""A classical word2vec folder served on /v1/embeddings and /v1/similarity (`munjang serve --model
w2v=PATH`): it encodes whole texts, so the server checks and counts its inputs as for CLIP and static
models and encodes them under the compute gate; the vectors are the encoder's own."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from munjang.encoders.classical import Word2VecEncoder, fit_classical, load_classical_encoder
from munjang.server.app import create_app
from munjang.server.served_models import load_served_model
from munjang.server.settings import ServerSettings
from tests.helpers.classical import CORPUS
from tests.helpers.processes import ROOT, free_port
from tests.helpers.server import LOCAL, live_server

pytest.importorskip("gensim")

LIMIT = 40  # the served model's characters per input


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("w2v")
    fit_classical("skipgram", CORPUS, min_count=1, vector_size=12, epochs=3).save(root / "w2v")
    fit_classical("tfidf", CORPUS).save(root / "tfidf")
    return {"w2v": root / "w2v", "tfidf": root / "tfidf"}


@pytest.fixture(scope="module")
def served(folders: dict[str, Path]) -> tuple[TestClient, Word2VecEncoder]:
    model = load_served_model(folders["w2v"])
    assert isinstance(model, Word2VecEncoder)
    model.max_chars = LIMIT
    reference = load_classical_encoder(folders["w2v"])  # loaded apart: the parity is with the folder
    reference.max_chars = LIMIT
    assert isinstance(reference, Word2VecEncoder)
    collections = folders["w2v"].parent / "cols"
    collections.mkdir()
    app = create_app(ServerSettings(models={"w2v": model}, collections_dir=collections))
    return TestClient(app, raise_server_exceptions=False, base_url=LOCAL), reference


def test_embeddings_equal_the_encoders_in_both_formats(served) -> None:
    client, reference = served
    texts = ["고양이가 생선을 좋아한다", "비가 온다"]
    answer = client.post("/v1/embeddings", json={"model": "w2v", "input": texts})
    assert answer.status_code == 200, answer.text
    got = np.array([row["embedding"] for row in answer.json()["data"]], dtype=np.float32)
    np.testing.assert_array_equal(got, reference.encode(texts))
    assert answer.json()["usage"]["prompt_tokens"] == sum(map(len, texts))  # characters: its length unit
    packed = client.post("/v1/embeddings", json={"input": texts[0], "encoding_format": "base64"})
    assert packed.status_code == 200, packed.text
    raw = np.frombuffer(base64.b64decode(packed.json()["data"][0]["embedding"]), dtype="<f4")
    np.testing.assert_array_equal(raw, reference.encode(texts[0]))
    short = client.post("/v1/embeddings", json={"input": texts, "dimensions": 5}).json()["data"]
    np.testing.assert_array_equal(
        np.array([row["embedding"] for row in short], dtype=np.float32),
        reference.encode(texts, truncate_dim=5),
    )


def test_long_inputs_are_cut_at_the_limit_or_refused(served) -> None:
    client, reference = served
    long = "고양이가 쥐를 쫓았다 " * 8  # 96 characters, over the limit of 40
    cut = client.post("/v1/embeddings", json={"input": long})
    assert cut.status_code == 200, cut.text
    np.testing.assert_array_equal(cut.json()["data"][0]["embedding"], reference.encode(long[:LIMIT]))
    assert cut.json()["usage"]["prompt_tokens"] == LIMIT
    refused = client.post("/v1/embeddings", json={"input": ["비", long], "truncate": False})
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "input_too_long"
    assert refused.json()["error"]["param"] == "input[1]"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": [""]}, "input[0]"),
        ({"input": []}, "input"),
        ({"input": [3, 4, 5]}, "input"),  # token ids: word2vec reads text
        ({"input": "비", "dimensions": 13}, "dimensions"),
        ({"input": "비", "prompt_name": "query"}, "prompt_name"),
    ],
)
def test_bad_requests_are_4xx_naming_the_field(served, body, param) -> None:
    client, _ = served
    answer = client.post("/v1/embeddings", json=body)
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.json()["error"]["param"] == param


def test_similarity_is_the_encoders_cosine(served) -> None:
    client, reference = served
    source, others = "고양이가 쥐를 쫓았다", ["고양이는 생선을 좋아한다", "주식 시장이 올랐다"]
    answer = client.post("/v1/similarity", json={"inputs": {"source_sentence": source, "sentences": others}})
    assert answer.status_code == 200, answer.text
    vectors = reference.encode([source, *others])
    np.testing.assert_allclose(answer.json(), reference.similarity(vectors[:1], vectors[1:])[0], atol=1e-6)
    tokens = client.post("/v1/tokenize", json={"inputs": "비"})
    assert tokens.status_code == 400 and tokens.json()["error"]["param"] == "model"
    assert client.get("/v1/models").json()["data"][0]["backend"] == "numpy"


def test_a_collection_of_the_served_model_searches_with_it(served, folders) -> None:
    client, reference = served
    created = client.post("/v1/collections", json={"name": "animals", "model": "w2v"})
    assert created.status_code == 201, created.text
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(CORPUS)]
    assert client.post("/v1/collections/animals/documents", json={"documents": docs}).status_code == 200
    hits = client.post(
        "/v1/collections/animals/search", json={"query": "고양이 생선", "mode": "dense", "top_k": 3}
    ).json()["data"]
    query = reference.encode_query("고양이 생선")
    scores = reference.encode_document(CORPUS) @ query
    assert [h["id"] for h in hits] == [f"d{i}" for i in np.argsort(-scores, kind="stable")[:3]]


def test_term_vectors_are_refused_as_a_dense_model(folders) -> None:
    with pytest.raises(ValueError, match="--sparse-model"):
        load_served_model(folders["tfidf"])


def test_munjang_serve_loads_the_folder_in_a_fresh_process(folders, tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MUNJANG_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "munjang.cli", "serve", "--model", f"w2v={folders['w2v']}"]
    command += ["--port", str(port), "--no-mcp"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("serving w2v at "), line
        texts = ["고양이가 생선을 좋아한다", "비가 온다"]
        answer = httpx.post(f"http://127.0.0.1:{port}/v1/embeddings", json={"input": texts}, timeout=60)
        assert answer.status_code == 200, answer.text
        got = np.array([row["embedding"] for row in answer.json()["data"]], dtype=np.float32)
        np.testing.assert_array_equal(got, load_classical_encoder(folders["w2v"]).encode(texts))
    finally:
        server.kill()
        server.wait()


def test_the_mcp_embed_tool_serves_it(folders) -> None:
    pytest.importorskip("mcp")
    import anyio
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    model = load_classical_encoder(folders["w2v"])
    texts = ["고양이가 생선을 좋아한다", "비가 온다"]

    async def embed(url: str) -> object:
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            streamable_http_client(url, http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            result = await session.call_tool("embed", {"texts": texts})
            assert not result.is_error, result.content
            return result.structured_content

    with live_server(create_app(ServerSettings(models={"w2v": model}, mcp=True))) as base:
        answer = anyio.run(embed, f"{base}/mcp")
    assert isinstance(answer, dict) and answer["model"] == "w2v"
    np.testing.assert_array_equal(np.array(answer["embeddings"], dtype=np.float32), model.encode(texts))
