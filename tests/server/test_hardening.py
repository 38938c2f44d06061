"""Inputs that used to end in a 500, a null score, a traceback or a silently embedded nothing: each is
now a 4xx naming its field (or one `error:` line at the CLI), and nothing stored changes."""

from __future__ import annotations

import json
import logging
import shutil
import socket
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient

import munjang
from munjang import Collection
from munjang.errors import ModelLoadError
from munjang.search.backends.filters import compile_filter
from munjang.server import ServerSettings, create_app
from tests.helpers.cli import run_cli
from tests.helpers.server import LOCAL, live_server


@pytest.fixture
def client(encoder, tmp_path):
    with Collection.create(tmp_path / "main", encoder=encoder) as collection:
        collection.add(["1", "2"], ["고양이가 잔다", "주식 시장이 급락했다"], [{"a": 1}, {"a": 2}])
    app = create_app(ServerSettings(models={"mini": encoder}, collections_dir=tmp_path))
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as http:
        yield http


def error_of(response, status: int, param: str | None) -> str:
    assert response.status_code == status, response.text
    assert response.json()["error"]["param"] == param
    return response.json()["error"]["message"]


def test_deep_and_wide_filters_are_400_naming_the_filter(client) -> None:
    deep: dict = {"a": 1}
    for _ in range(30):
        deep = {"$not": deep}
    wide = {"$or": [{"a": i} for i in range(5000)]}
    for spec, words in ((deep, "nested more than"), (wide, "more than 256 conditions")):
        answer = client.post("/v1/collections/main/search", json={"query": "고양이", "filter": spec})
        assert words in error_of(answer, 400, "filter")
    assert client.post("/v1/collections/main/map", json={"filter": deep}).status_code == 400
    fine = client.post("/v1/collections/main/search", json={"query": "고양이", "filter": {"a": {"$lt": 2}}})
    assert [h["id"] for h in fine.json()["data"]] == ["1"]


def test_huge_or_non_finite_weights_are_400(client) -> None:
    for weights in ([1e308, 1e308], [-1, 1], [0, 0], [1.0]):
        answer = client.post("/v1/collections/main/search", json={"query": "고양이", "weights": weights})
        error_of(answer, 400, "weights")
    answer = client.post(  # 1e400 parses to infinity
        "/v1/collections/main/search",
        content=b'{"query": "cat", "weights": [1e400, 1]}',
        headers={"Content-Type": "application/json"},
    )
    error_of(answer, 400, "weights")


def test_filter_values_must_be_finite_and_keys_whole() -> None:
    with pytest.raises(ValueError, match="finite"):
        compile_filter({"a": float("nan")})
    with pytest.raises(ValueError, match="bad filter key"):
        compile_filter({"a\n": 1})


def test_names_with_a_trailing_newline_are_refused(client) -> None:
    error_of(client.post("/v1/collections", json={"name": "x\n"}), 400, "name")


@pytest.mark.parametrize("text", [" ", "\x00", "\u200b", "\ufeff\u200d", "\t\n"])
def test_invisible_inputs_are_empty(client, text: str) -> None:
    assert "visible" in error_of(client.post("/v1/embeddings", json={"input": [text]}), 400, "input[0]")
    error_of(client.post("/v1/embeddings", json={"input": text}), 400, "input")
    error_of(client.post("/v1/collections/main/search", json={"query": text}), 400, "query")


@pytest.mark.parametrize("value", ["yes", 1, "true"])
def test_truncate_takes_only_booleans(client, value) -> None:
    error_of(client.post("/v1/embeddings", json={"input": "a", "truncate": value}), 422, "truncate")
    error_of(client.post("/v1/collections/main/search", json={"query": "a", "rerank": value}), 422, "rerank")


def test_a_client_leaving_mid_body_logs_no_traceback(encoder, caplog) -> None:
    app = create_app(ServerSettings(models={"mini": encoder}))
    with caplog.at_level(logging.INFO), live_server(app) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as raw:
            raw.sendall(
                b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b'Content-Length: 1000\r\n\r\n{"input": "abc'
            )
        import httpx

        assert httpx.get(f"{url}/health").status_code == 200
    assert "Traceback" not in caplog.text and "unexpected error" not in caplog.text


TRANSFORMER = "sentence_transformers.models.Transformer"
POOLING = "sentence_transformers.models.Pooling"


def copy_model(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def test_pickle_weights_with_code_are_one_clear_error(minilm_path, tmp_path, capsys, monkeypatch) -> None:
    folder = copy_model(minilm_path, tmp_path / "m")
    (folder / "model.safetensors").unlink()
    torch.save({"weights": torch.zeros(1), "payload": Path("/")}, folder / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="weights-only reader") as error:
        munjang.load_encoder(folder, device="cpu")
    assert "weights_only=False" not in str(error.value)
    code, _, err = run_cli(["info", str(folder)], capsys, monkeypatch)
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "entries, words",
    [
        ([None], "entry 0 is not an object"),
        (
            [{"idx": 0, "path": None, "type": "sentence_transformers.models.Transformer"}],
            "'path' must be text",
        ),
        (
            [{"idx": 0, "path": "../outside", "type": "sentence_transformers.models.Pooling"}],
            "outside the model",
        ),
        ([{"idx": 0, "path": "/etc", "type": "sentence_transformers.models.Pooling"}], "outside the model"),
    ],
)
def test_bad_modules_json_is_a_clear_error(minilm_path, tmp_path, entries, words: str) -> None:
    folder = copy_model(minilm_path, tmp_path / "m")
    (tmp_path / "outside").mkdir()
    (folder / "modules.json").write_text(json.dumps(entries))
    with pytest.raises(ModelLoadError, match=words):
        munjang.load_encoder(folder, device="cpu")
