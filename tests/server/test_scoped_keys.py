"""Scoped keys over HTTP: 401 without a known key, 403 naming the missing scope or collection, a
revoke that takes effect at the next request, the audit line per write, and every /v1 route with a
declared scope (routes added later are caught here)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient

from munjang import Collection
from munjang.access import create_key, revoke_key
from munjang.server import ServerSettings, create_app
from munjang.server.route_scopes import ROUTE_SCOPES
from tests.helpers.cli import run_cli
from tests.helpers.server import LOCAL


@pytest.fixture(scope="module")
def place(encoder, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    where = tmp_path_factory.mktemp("scoped")
    for name, text in (("docs", "고양이가 소파에서 잔다"), ("hr", "연봉 협상은 3월에 한다")):
        with Collection.create(where / name, encoder=encoder) as collection:
            collection.add(["1"], [text])
    return where


@pytest.fixture(scope="module")
def secrets_(place: Path) -> dict[str, str]:
    keys = place / "keys.json"
    return {
        "reader": create_key(keys, "reader", ["read"]),
        "ingest": create_key(keys, "ingest", ["read", "write"], ["docs"]),
        "admin": create_key(keys, "admin", ["read", "write", "admin"]),
        "doomed": create_key(keys, "doomed", ["read"]),
    }


@pytest.fixture(scope="module")
def app(encoder, place, secrets_):  # type: ignore[no-untyped-def]
    settings = ServerSettings(
        models={"mini": encoder}, collections_dir=place, keys_file=place / "keys.json", api_key="root"
    )
    return create_app(settings)


@pytest.fixture(scope="module")
def client(app):  # type: ignore[no-untyped-def]
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as http:
        yield http


def as_key(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_no_key_or_an_unknown_one_is_401(client) -> None:  # type: ignore[no-untyped-def]
    body = {"query": "고양이"}
    assert client.post("/v1/collections/docs/search", json=body).status_code == 401
    answer = client.post("/v1/collections/docs/search", json=body, headers=as_key("mj_not-a-key"))
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "invalid_api_key"


def test_a_read_only_key_searches_but_its_add_is_403(client, secrets_) -> None:  # type: ignore[no-untyped-def]
    key = as_key(secrets_["reader"])
    found = client.post("/v1/collections/docs/search", json={"query": "고양이"}, headers=key)
    assert found.status_code == 200 and found.json()["data"][0]["id"] == "1"
    docs = {"documents": [{"id": "2", "text": "강아지"}]}
    refused = client.post("/v1/collections/docs/documents", json=docs, headers=key)
    assert refused.status_code == 403
    assert "'write' scope" in refused.json()["error"]["message"]
    assert refused.json()["error"]["code"] == "missing_scope_write"
    dropped = client.delete("/v1/collections/docs", headers={**key, "content-type": "application/json"})
    assert dropped.status_code == 403 and "'admin'" in dropped.json()["error"]["message"]
    assert client.post("/v1/embeddings", json={"input": "안녕"}, headers=key).status_code == 200


def test_a_key_limited_to_one_collection_is_403_on_another(client, secrets_) -> None:  # type: ignore[no-untyped-def]
    key = as_key(secrets_["ingest"])
    assert (
        client.post("/v1/collections/docs/search", json={"query": "고양이"}, headers=key).status_code == 200
    )
    other = client.post("/v1/collections/hr/search", json={"query": "연봉"}, headers=key)
    assert other.status_code == 403 and "'hr'" in other.json()["error"]["message"]
    assert other.json()["error"]["code"] == "collection_not_allowed"
    listed = client.get("/v1/collections", headers=key).json()["data"]
    assert [c["name"] for c in listed] == ["docs"]
    assert {
        c["name"] for c in client.get("/v1/collections", headers=as_key(secrets_["admin"])).json()["data"]
    } == {
        "docs",
        "hr",
    }


def test_the_api_key_keeps_every_scope(client) -> None:  # type: ignore[no-untyped-def]
    created = client.post("/v1/collections", json={"name": "scratch"}, headers=as_key("root"))
    assert created.status_code == 201, created.text
    dropped = client.delete(
        "/v1/collections/scratch", headers={**as_key("root"), "content-type": "application/json"}
    )
    assert dropped.status_code == 200


def test_a_limited_admin_cannot_create_outside_its_collections(place, client) -> None:  # type: ignore[no-untyped-def]
    secret = create_key(place / "keys.json", "docs-admin", ["admin"], ["docs2"])
    refused = client.post("/v1/collections", json={"name": "other"}, headers=as_key(secret))
    assert refused.status_code == 403 and "'other'" in refused.json()["error"]["message"]
    assert "other" not in {
        c["name"] for c in client.get("/v1/collections", headers=as_key("root")).json()["data"]
    }


def test_a_write_is_audited_with_the_key_name(client, secrets_, caplog) -> None:  # type: ignore[no-untyped-def]
    docs = {"documents": [{"id": "a1", "text": "감사 기록"}, {"id": "a2", "text": "두 번째"}]}
    with caplog.at_level(logging.INFO, logger="munjang.audit"):
        answer = client.post("/v1/collections/docs/documents", json=docs, headers=as_key(secrets_["ingest"]))
        assert answer.status_code == 200
        client.post(
            "/v1/collections/docs/delete", json={"ids": ["a1", "a2"]}, headers=as_key(secrets_["ingest"])
        )
    lines = [r for r in caplog.records if r.name == "munjang.audit"]
    assert [r.key for r in lines] == ["ingest", "ingest"]  # type: ignore[attr-defined]
    assert lines[0].collection == "docs" and lines[0].counts["added"] == 2  # type: ignore[attr-defined]
    assert "documents" in lines[0].route and lines[1].counts["deleted"] == 2  # type: ignore[attr-defined]
    assert "key=ingest" in lines[0].getMessage()


def test_revoking_takes_effect_at_the_next_request(place, client, secrets_) -> None:  # type: ignore[no-untyped-def]
    key = as_key(secrets_["doomed"])
    assert client.get("/v1/models", headers=key).status_code == 200
    revoke_key(place / "keys.json", "doomed")
    answer = client.get("/v1/models", headers=key)
    assert answer.status_code == 401 and "revoked" in answer.json()["error"]["message"]
    assert client.get("/v1/models", headers=as_key(secrets_["reader"])).status_code == 200


def test_a_damaged_keys_file_accepts_no_key(encoder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    keys = tmp_path / "keys.json"
    secret = create_key(keys, "reader", ["read"])
    app = create_app(ServerSettings(models={"mini": encoder}, keys_file=keys, api_key="root"))
    with TestClient(app, base_url=LOCAL) as http:
        assert http.get("/v1/models", headers=as_key(secret)).status_code == 200
        keys.write_text(keys.read_text().replace('"read"', '"admin"'))  # a hand edit: checksum fails
        answer = http.get("/v1/models", headers=as_key(secret))
        assert answer.status_code == 503 and answer.json()["error"]["code"] == "keys_unavailable"
        assert http.get("/v1/models", headers=as_key("root")).status_code == 200


def test_openapi_needs_a_read_key(client, secrets_) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/openapi.json").status_code == 401
    assert client.get("/openapi.json", headers=as_key(secrets_["reader"])).status_code == 200


def test_every_v1_route_declares_its_scope(app) -> None:  # type: ignore[no-untyped-def]
    routes = {
        (method, route.path)
        for route in iter_route_contexts(app.routes)
        if isinstance(route.original_route, APIRoute) and route.path.startswith("/v1/")
        for method in route.methods
    }
    assert ("POST", "/v1/collections/{name}/search") in routes
    missing = sorted(routes - set(ROUTE_SCOPES))
    assert not missing, f"add these routes to munjang.server.route_scopes.ROUTE_SCOPES: {missing}"
    stale = sorted(set(ROUTE_SCOPES) - routes)
    assert not stale, f"ROUTE_SCOPES names routes that no longer exist: {stale}"
    for (method, path), rule in ROUTE_SCOPES.items():
        assert rule.collection is None or "{" + rule.collection in path, (method, path)


def test_keys_cli_prints_the_secret_once_and_stores_only_its_hash(tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    keys = str(tmp_path / "keys.json")
    code, out, _ = run_cli(
        ["keys", "create", "web", "--keys", keys, "--scope", "read", "--collection", "docs"],
        capsys,
        monkeypatch,
    )
    secret = out.strip()
    assert code == 0 and secret.startswith("mj_") and secret not in Path(keys).read_text()
    code, out, _ = run_cli(["keys", "list", "--keys", keys, "--json"], capsys, monkeypatch)
    assert code == 0 and '"collections": ["docs"]' in out and '"revoked": null' in out
    code, _, err = run_cli(["keys", "create", "web", "--keys", keys, "--scope", "read"], capsys, monkeypatch)
    assert code == 2 and err.startswith("error:") and "already exists" in err
    code, _, err = run_cli(["keys", "create", "x", "--keys", keys, "--scope", "root"], capsys, monkeypatch)
    assert code == 2 and err.startswith("error:") and "unknown scope" in err
    code, out, _ = run_cli(["keys", "revoke", "web", "--keys", keys], capsys, monkeypatch)
    assert code == 0 and "revoked" in out
    code, _, err = run_cli(["keys", "revoke", "nobody", "--keys", keys], capsys, monkeypatch)
    assert code == 2 and err.count("\n") == 1 and "no key named" in err
