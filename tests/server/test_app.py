"""munjang's HTTP server: the official openai client against a live uvicorn, and every error answer."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL, live_server

MODEL = "all-MiniLM-L6-v2"
TEXTS = ["The cat sits on the mat.", "문장 임베딩 서버", "A third, slightly longer sentence about dogs."]


@pytest.fixture(scope="module")
def client(encoder) -> TestClient:
    settings = ServerSettings(models={MODEL: encoder}, max_inputs_per_request=4, max_chars_per_input=2000)
    return TestClient(create_app(settings), raise_server_exceptions=False, base_url=LOCAL)


@pytest.fixture(scope="module")
def live_url(encoder) -> Iterator[str]:
    # The model runs in a process of its own, as under `munjang serve`.
    app = create_app(ServerSettings(models={MODEL: encoder}, api_key="k", model_processes=1))
    with live_server(app) as url:
        yield url


def assert_error(response: httpx.Response, status: int, param: str | None) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["param"] == param
    assert error["message"]
    return error


def test_openai_client_float_base64_and_single(live_url, encoder):
    import openai

    client = openai.OpenAI(base_url=f"{live_url}/v1", api_key="k", max_retries=0)
    expected = encoder.encode(TEXTS)
    result = client.embeddings.create(model=MODEL, input=TEXTS)
    got = np.array([d.embedding for d in sorted(result.data, key=lambda d: d.index)])
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert result.model == MODEL
    tokens = sum(len(ids) for ids in encoder.transformer.tokenize(TEXTS)["input_ids"])
    assert result.usage.prompt_tokens == result.usage.total_tokens == tokens

    # Asked for explicitly, base64 comes back as the string (the client decodes only its own default).
    b64 = client.embeddings.create(model=MODEL, input=TEXTS, encoding_format="base64")
    decoded = [np.frombuffer(base64.b64decode(d.embedding), dtype="<f4") for d in b64.data]
    np.testing.assert_allclose(np.array(decoded), expected, atol=1e-5)

    single = client.embeddings.create(model=MODEL, input=TEXTS[0])
    assert len(single.data) == 1
    np.testing.assert_allclose(single.data[0].embedding, expected[0], atol=1e-5)
    assert single.usage.prompt_tokens == len(encoder.transformer.tokenize(TEXTS[:1])["input_ids"][0])

    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{live_url}/v1", api_key="wrong", max_retries=0).embeddings.create(
            model=MODEL, input="x"
        )


def test_base64_is_little_endian_float32(client, encoder):
    r = client.post("/v1/embeddings", json={"model": MODEL, "input": "hello", "encoding_format": "base64"})
    assert r.status_code == 200
    vector = np.frombuffer(base64.b64decode(r.json()["data"][0]["embedding"]), dtype="<f4")
    np.testing.assert_allclose(vector, encoder.encode("hello"), atol=1e-5)


def test_response_shape_and_default_model(client):
    r = client.post("/v1/embeddings", json={"input": ["a", "b"]})
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "list" and body["model"] == MODEL
    assert [d["index"] for d in body["data"]] == [0, 1]
    assert all(d["object"] == "embedding" for d in body["data"])


def test_dimensions_truncate_and_renormalize(client, encoder):
    r = client.post("/v1/embeddings", json={"model": MODEL, "input": TEXTS, "dimensions": 64})
    assert r.status_code == 200
    vectors = np.array([d["embedding"] for d in r.json()["data"]])
    assert vectors.shape == (3, 64)
    full = encoder.encode(TEXTS)[:, :64]
    np.testing.assert_allclose(vectors, full / np.linalg.norm(full, axis=1, keepdims=True), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_token_id_inputs(client, encoder):
    ids = encoder.transformer.tokenize(TEXTS[:2])["input_ids"]
    expected = encoder.encode([encoder.tokenizer.decode(x, skip_special_tokens=True) for x in ids])
    r = client.post("/v1/embeddings", json={"model": MODEL, "input": ids})
    assert r.status_code == 200
    np.testing.assert_allclose([d["embedding"] for d in r.json()["data"]], expected, atol=1e-5)
    one = client.post("/v1/embeddings", json={"model": MODEL, "input": ids[0]})
    assert one.status_code == 200 and len(one.json()["data"]) == 1
    np.testing.assert_allclose(one.json()["data"][0]["embedding"], expected[0], atol=1e-5)


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"model": MODEL, "input": ""}, 400, "input"),
        ({"model": MODEL, "input": []}, 400, "input"),
        ({"model": MODEL, "input": ["ok", ""]}, 400, "input[1]"),
        ({"model": MODEL, "input": ["a"] * 5}, 400, "input"),
        ({"model": MODEL, "input": "x" * 2001}, 400, "input"),
        ({"model": MODEL, "input": [[1, 2], [10**9]]}, 400, "input[1]"),
        ({"model": MODEL, "input": ["a", 1]}, 422, "input"),
        ({"model": MODEL, "input": 5}, 422, "input"),
        ({"model": MODEL}, 422, "input"),
        ({"model": 3, "input": "a"}, 422, "model"),
        ({"model": MODEL, "input": "a", "encoding_format": "hex"}, 422, "encoding_format"),
        ({"model": MODEL, "input": "a", "dimensions": "8"}, 422, "dimensions"),
        ({"model": MODEL, "input": "a", "dimensions": 0}, 400, "dimensions"),
        ({"model": MODEL, "input": "a", "dimensions": 385}, 400, "dimensions"),
        ({"model": MODEL, "input": "a", "prompt_name": "query"}, 400, "prompt_name"),
        ({"model": "gpt-nope", "input": "a"}, 404, "model"),
    ],
)
def test_bad_requests(client, body, status, param):
    assert_error(client.post("/v1/embeddings", json=body), status, param)


def test_too_long_without_truncation(client):
    long_text = "word " * 350
    ok = client.post("/v1/embeddings", json={"model": MODEL, "input": ["short", long_text]})
    assert ok.status_code == 200
    r = client.post("/v1/embeddings", json={"model": MODEL, "input": ["short", long_text], "truncate": False})
    error = assert_error(r, 400, "input[1]")
    assert "tokens" in error["message"]


def test_invalid_json_and_non_object(client):
    headers = {"content-type": "application/json"}
    assert_error(client.post("/v1/embeddings", content=b"{not json", headers=headers), 400, None)
    assert_error(client.post("/v1/embeddings", content=b"[1, 2]", headers=headers), 400, None)


def test_body_limit(encoder):
    app = create_app(ServerSettings(models={MODEL: encoder}, max_body_bytes=1000))
    client = TestClient(app, raise_server_exceptions=False, base_url=LOCAL)
    big = json.dumps({"model": MODEL, "input": "x" * 2000}).encode()
    headers = {"content-type": "application/json"}
    assert_error(client.post("/v1/embeddings", content=big, headers=headers), 413, None)

    def chunks() -> Iterator[bytes]:  # no Content-Length: the bytes received are counted
        yield big[:600]
        yield big[600:]

    assert_error(client.post("/v1/embeddings", content=chunks(), headers=headers), 413, None)


def test_api_key(encoder):
    client = TestClient(create_app(ServerSettings(models={MODEL: encoder}, api_key="secret")), base_url=LOCAL)
    body = {"model": MODEL, "input": "a"}
    assert_error(client.post("/v1/embeddings", json=body), 401, None)
    wrong = client.post("/v1/embeddings", json=body, headers={"Authorization": "Bearer nope"})
    assert_error(wrong, 401, None)
    assert_error(client.get("/v1/models"), 401, None)
    right = {"Authorization": "Bearer secret"}
    assert client.post("/v1/embeddings", json=body, headers=right).status_code == 200
    assert client.get("/v1/models", headers=right).status_code == 200
    assert client.get("/health").json() == {"status": "ok", "models": [MODEL]}


def test_models_health_openapi_and_unknown_route(client):
    models = client.get("/v1/models").json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == [MODEL]
    assert models["data"][0]["object"] == "model"
    assert client.get("/health").json() == {"status": "ok", "models": [MODEL]}
    spec = client.get("/openapi.json").json()
    assert "/v1/embeddings" in spec["paths"] and "/v1/models" in spec["paths"]
    assert "input" in json.dumps(spec["paths"]["/v1/embeddings"]["post"]["requestBody"])
    assert_error(client.get("/v2/nothing"), 404, None)


def test_unexpected_error_is_json_500_without_traceback(encoder, monkeypatch):
    import munjang.server.app as app_module

    async def boom(*args, **kwargs):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(app_module, "embed_batched", boom)
    client = TestClient(
        create_app(ServerSettings(models={MODEL: encoder})), raise_server_exceptions=False, base_url=LOCAL
    )
    r = client.post("/v1/embeddings", json={"model": MODEL, "input": "a"})
    assert_error(r, 500, None)
    assert "secret" not in r.text and "Traceback" not in r.text


def test_munjang_error_is_400(encoder, monkeypatch):
    import munjang.server.app as app_module
    from munjang.errors import DataFormatError

    async def bad(*args, **kwargs):
        raise DataFormatError("bad data")

    monkeypatch.setattr(app_module, "embed_batched", bad)
    client = TestClient(
        create_app(ServerSettings(models={MODEL: encoder})), raise_server_exceptions=False, base_url=LOCAL
    )
    assert_error(client.post("/v1/embeddings", json={"model": MODEL, "input": "a"}), 400, None)


def test_the_web_page_and_its_files_are_served_without_external_resources(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for asset, kind in (("/static/app.js", "javascript"), ("/static/style.css", "text/css")):
        answer = client.get(asset)
        assert answer.status_code == 200 and kind in answer.headers["content-type"]
        assert "http://" not in answer.text and "https://" not in answer.text, f"{asset} loads from elsewhere"
    assert "https://" not in page.text and "http://" not in page.text
    assert client.get("/static/missing.js").status_code == 404
    assert "/" not in client.get("/openapi.json").json()["paths"]
