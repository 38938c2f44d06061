"""The second adversarial round, replayed: inputs and headers that ended in a 500, a heap address
in a message, work done before a request was checked, or a check fooled by a second header."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from munjang import Collection
from munjang.server import ServerSettings, create_app
from tests.helpers.cli import run_cli
from tests.helpers.server import LOCAL

HUGE = 10**30


@pytest.fixture(scope="module")
def folder(encoder, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    where = tmp_path_factory.mktemp("hostile")
    with Collection.create(where / "main", encoder=encoder) as collection:
        collection.add(
            ["1", "2"], ["고양이가 잔다", "주식 시장이 급락했다"], [{"year": 2019}, {"year": 2024}]
        )
    return where


@pytest.fixture(scope="module")
def client(encoder, folder):  # type: ignore[no-untyped-def]
    app = create_app(ServerSettings(models={"mini": encoder}, collections_dir=folder))
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as http:
        yield http


@pytest.mark.parametrize(
    "spec",
    [
        {"year": HUGE},
        {"year": -HUGE},
        {"year": 2**63},
        {"year": -(2**63) - 1},
        {"year": {"$gt": HUGE}},
        {"year": {"$in": [1, HUGE]}},
        {"$or": [{"year": 1}, {"year": {"$lte": -HUGE}}]},
    ],
)
def test_filter_integers_outside_int64_are_400(client, spec) -> None:  # type: ignore[no-untyped-def]
    for route, body in (("search", {"query": "고양이", "filter": spec}), ("map", {"filter": spec})):
        answer = client.post(f"/v1/collections/main/{route}", json=body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["param"] == "filter"
        assert "64 bits" in answer.json()["error"]["message"]


def test_int64_bounds_themselves_still_filter(client) -> None:  # type: ignore[no-untyped-def]
    for spec, ids in (({"year": {"$lt": 2**63 - 1}}, {"1", "2"}), ({"year": {"$gt": -(2**63)}}, {"1", "2"})):
        answer = client.post("/v1/collections/main/search", json={"query": "고양이", "filter": spec})
        assert answer.status_code == 200 and {h["id"] for h in answer.json()["data"]} == ids


def test_cli_filter_outside_int64_is_one_line(folder, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    args = ["index", "search", str(folder / "main"), "-q", "고양이", "--filter", f"year={HUGE}"]
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 2 and err.startswith("error:") and "64 bits" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("header", ["origin", "content-type", "host"])
def test_a_repeated_guarded_header_is_400(client, header: str) -> None:  # type: ignore[no-untyped-def]
    values = {
        "origin": ["http://evil.example", "http://127.0.0.1"],
        "content-type": ["text/plain", "application/json"],
        "host": ["evil.example", "127.0.0.1"],
    }[header]
    headers = [("content-type", "application/json")] if header != "content-type" else []
    headers += [(header, v) for v in values]
    answer = client.post("/v1/collections/main/delete", content=b'{"ids": ["1"]}', headers=headers)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "duplicate_header"
    assert client.post("/v1/collections/main/search", json={"query": "고양이"}).json()["data"]


@pytest.mark.parametrize("host", ["[127.0.0.1]evil.com", "[::1]evil.com", "[127.0.0.1]", "[::1]:80x"])
def test_a_bracketed_host_must_be_an_ipv6_literal(client, host: str) -> None:  # type: ignore[no-untyped-def]
    answer = client.get("/v1/collections", headers={"host": host})
    assert answer.status_code == 403, answer.text
    assert client.get("/v1/collections", headers={"host": "[::1]:8000"}).status_code == 200


def test_with_a_key_only_health_metrics_and_the_page_are_open(encoder) -> None:  # type: ignore[no-untyped-def]
    app = create_app(ServerSettings(models={"mini": encoder}, api_key="k"))
    with TestClient(app, base_url=LOCAL) as http:
        for path in ("/health", "/metrics", "/", "/static/app.js"):
            assert http.get(path).status_code == 200, path
        for path in ("/docs", "/redoc", "/docs-assets/swagger-ui.css"):
            assert http.get(path).status_code == 404, path
        assert http.get("/openapi.json").status_code == 401
        spec = http.get("/openapi.json", headers={"Authorization": "Bearer k"})
        assert spec.status_code == 200 and "/v1/embeddings" in spec.json()["paths"]


def test_without_a_key_the_docs_load_nothing_from_elsewhere(client) -> None:  # type: ignore[no-untyped-def]
    page = client.get("/docs")
    assert page.status_code == 200 and "swagger-ui-bundle.js" in page.text
    assert "http://" not in page.text and "https://" not in page.text
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"):
        assert client.get(f"/docs-assets/{asset}").status_code == 200, asset
    assert client.get("/redoc").status_code == 404
    assert "/v1/embeddings" in client.get("/openapi.json").json()["paths"]
