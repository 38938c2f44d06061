"""Cross-site requests against a server with no API key, replayed as a hostile page would send them:
refused before any route runs, and nothing stored changes."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from munjang import Collection
from munjang.server import ServerSettings, create_app
from munjang.server.guard import default_allowed_hosts, host_name, is_loopback
from tests.helpers.server import LOCAL

DOCS = [{"id": "1", "text": "고양이가 잔다"}, {"id": "2", "text": "주식 시장이 급락했다"}]


@pytest.fixture
def served(encoder, tmp_path):
    """A keyless server over a collections folder holding `main` with two documents."""
    with Collection.create(tmp_path / "main", encoder=encoder) as collection:
        collection.add([d["id"] for d in DOCS], [d["text"] for d in DOCS])

    def start(**settings) -> TestClient:
        app = create_app(ServerSettings(models={"mini": encoder}, collections_dir=tmp_path, **settings))
        return TestClient(app, base_url=LOCAL)

    def count() -> int:
        with Collection.open(tmp_path / "main", encoder=encoder) as collection:
            return len(collection)

    return start, count, tmp_path


def test_text_plain_delete_from_another_page_is_refused(served) -> None:
    start, count, _ = served
    with start() as client:
        answer = client.post(
            "/v1/collections/main/delete", content=b'{"ids":["2"]}', headers={"Content-Type": "text/plain"}
        )
        assert answer.status_code == 415
        assert answer.json()["error"]["code"] == "unsupported_media_type"
        assert "text/plain" in answer.json()["error"]["message"]
        form = client.post("/v1/collections/main/delete", data={"ids": "2"})
        assert form.status_code == 415
    assert count() == 2


def test_text_plain_create_is_refused(served) -> None:
    start, _, folder = served
    with start() as client:
        answer = client.post(
            "/v1/collections", content=b'{"name":"evil"}', headers={"Content-Type": "text/plain"}
        )
        assert answer.status_code == 415
        missing = client.post("/v1/collections", content=b'{"name":"evil"}')
        assert missing.status_code == 415 and "none" in missing.json()["error"]["message"]
    assert not (folder / "evil").exists()


def test_foreign_host_is_refused_even_for_reads(served) -> None:
    start, _, _ = served
    with start() as client:
        for path in ("/v1/models", "/v1/collections", "/health", "/"):
            answer = client.get(path, headers={"Host": "attacker.example"})
            assert answer.status_code == 403, path
            assert answer.json()["error"]["code"] == "host_not_allowed"
        for host in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000", "app.localhost"):
            assert client.get("/v1/models", headers={"Host": host}).status_code == 200, host
        metrics = client.get("/metrics").text
        assert 'munjang_rejected_total{reason="host_not_allowed"} 4.0' in metrics


def test_cross_origin_requests_are_refused_same_origin_served(served) -> None:
    start, count, _ = served
    with start() as client:
        evil = {"Origin": "https://attacker.example"}
        answer = client.post("/v1/collections/main/delete", json={"ids": ["2"]}, headers=evil)
        assert answer.status_code == 403 and answer.json()["error"]["code"] == "origin_not_allowed"
        assert client.get("/v1/collections", headers=evil).status_code == 403
        assert client.get("/v1/models", headers={"Origin": "null"}).status_code == 403
        page = {"Origin": "http://127.0.0.1"}  # the server's own page
        assert (
            client.post("/v1/collections/main/delete", json={"ids": ["2"]}, headers=page).status_code == 200
        )
    assert count() == 1


def test_allow_lists(served) -> None:
    start, _, _ = served
    with start(allowed_hosts=("embed.internal",), allowed_origins=("https://app.example",)) as client:
        assert client.get("/v1/models", headers={"Host": "embed.internal:8000"}).status_code == 200
        assert client.get("/v1/models", headers={"Host": "other.internal"}).status_code == 403
        origin = {"Origin": "https://app.example"}
        body = {"inputs": {"source_sentence": "a", "sentences": ["b"]}}
        assert client.post("/v1/similarity", json=body, headers=origin).status_code == 200
    with start(host="0.0.0.0") as client:  # exposed on purpose: any Host, Origin still checked
        assert client.get("/v1/models", headers={"Host": "10.0.0.5:8000"}).status_code == 200
        assert client.get("/v1/models", headers={"Origin": "https://x.example"}).status_code == 403


def test_host_helpers() -> None:
    assert host_name("127.0.0.1:8000") == "127.0.0.1" and host_name("[::1]:80") == "::1"
    assert host_name("Example.COM") == "example.com" and host_name("::1") == "::1"
    assert is_loopback("127.0.0.2") and is_loopback("localhost") and not is_loopback("0.0.0.0")
    assert default_allowed_hosts("0.0.0.0") is None
    assert default_allowed_hosts("127.0.0.1", ["*"]) is None
    assert default_allowed_hosts("0.0.0.0", ["a.b:80"]) == frozenset({"a.b"})
