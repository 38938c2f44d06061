"""DELETE /v1/collections/{name} on every backend (folder, PostgreSQL, Qdrant's local mode): the
collection leaves the server and its storage, the name is free again, an unknown one is 404, a
refusal is 409 with the collection still served, searches racing the drop answer 200 or 404 (never
500), and the key and cross-site rules hold as for every write."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from munjang import Collection
from munjang.server import ServerSettings, create_app
from tests.helpers.collection_places import Place, writer_holding_the_lock
from tests.helpers.server import LOCAL

KEY = {"Authorization": "Bearer k"}
WRITE = {**KEY, "Content-Type": "application/json"}  # a DELETE to /v1/ is a write: JSON only
DOCS = [
    {"id": "d1", "text": "서울의 날씨가 오늘은 맑고 따뜻합니다."},
    {"id": "d2", "text": "주식 시장이 급락했다."},
    {"id": "d3", "text": "A man is playing a guitar."},
]


def _settings(place: Place, encoder: Any) -> ServerSettings:
    if place.url is None:
        return ServerSettings(models={"mini": encoder}, api_key="k", collections_dir=Path(place.where))
    return ServerSettings(models={"mini": encoder}, api_key="k", collections_db=place.url)


@pytest.fixture(params=["embedded", "postgres", "qdrant"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    return Place(request.param, tmp_path, request)


def _names(client: TestClient) -> list[str]:
    return [c["name"] for c in client.get("/v1/collections", headers=KEY).json()["data"]]


def _create(client: TestClient, name: str) -> None:
    assert client.post("/v1/collections", json={"name": name}, headers=KEY).status_code == 201
    added = client.post(f"/v1/collections/{name}/documents", json={"documents": DOCS}, headers=KEY)
    assert added.status_code == 200, added.text


def test_a_dropped_collection_leaves_the_server_and_its_storage(place: Place, encoder) -> None:
    with TestClient(create_app(_settings(place, encoder)), base_url=LOCAL) as client:
        _create(client, "news")
        _create(client, "kept")
        assert sorted(_names(client)) == ["kept", "news"]
        dropped = client.delete("/v1/collections/news", headers=WRITE)
        assert dropped.status_code == 200, dropped.text
        assert dropped.json() == {"name": "news", "dropped": True}
        assert _names(client) == ["kept"] and place.names() == ["kept"]
        gone = client.post("/v1/collections/news/search", json={"query": "날씨"}, headers=KEY)
        assert gone.status_code == 404 and gone.json()["error"]["param"] == "name"
        assert client.get("/v1/collections/news", headers=KEY).status_code == 404
        again = client.delete("/v1/collections/news", headers=WRITE)
        assert again.status_code == 404 and "not served here" in again.json()["error"]["message"]
        created = client.post("/v1/collections", json={"name": "news"}, headers=KEY)  # the name is free
        assert created.status_code == 201 and created.json()["documents"] == 0
        empty = client.post("/v1/collections/news/search", json={"query": "날씨"}, headers=KEY)
        assert empty.status_code == 200 and empty.json()["data"] == []
        kept = client.post("/v1/collections/kept/search", json={"query": "guitar"}, headers=KEY)
        assert kept.json()["data"][0]["id"] == "d3"
    assert place.names() == ["kept", "news"]


@pytest.mark.parametrize("kind", ["embedded", "postgres"])  # Qdrant's local mode: one process only
def test_a_refused_drop_is_409_and_the_collection_stays_served(kind, tmp_path, request, encoder) -> None:
    place = Place(kind, tmp_path, request)
    with TestClient(create_app(_settings(place, encoder)), base_url=LOCAL) as client:
        _create(client, "busy")
        with writer_holding_the_lock(place, "busy"):
            began = time.monotonic()
            refused = client.delete("/v1/collections/busy", headers=WRITE)
            waited = time.monotonic() - began
        assert waited < 30, f"{waited:.1f} s: the drop waited for the writer lock (60 s) to save the index"
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] == "drop_refused"
        assert "another process is writing" in refused.json()["error"]["message"]
        hits = client.post("/v1/collections/busy/search", json={"query": "guitar"}, headers=KEY)
        assert hits.status_code == 200 and hits.json()["data"][0]["id"] == "d3"
        assert _names(client) == ["busy"]
        assert client.delete("/v1/collections/busy", headers=WRITE).status_code == 200
    assert place.names() == []


def test_searches_racing_a_drop_answer_200_or_404(tmp_path: Path, encoder) -> None:
    place = Place("embedded", tmp_path, None)  # type: ignore[arg-type]
    statuses: list[int] = []
    with TestClient(create_app(_settings(place, encoder)), base_url=LOCAL) as client:
        _create(client, "news")
        started = threading.Barrier(4)

        def search() -> None:
            started.wait()
            for _ in range(15):
                body = {"query": "서울 날씨", "top_k": 2}
                statuses.append(
                    client.post("/v1/collections/news/search", json=body, headers=KEY).status_code
                )

        threads = [threading.Thread(target=search) for _ in range(3)]
        for thread in threads:
            thread.start()
        started.wait()
        assert client.delete("/v1/collections/news", headers=WRITE).status_code == 200
        for thread in threads:
            thread.join(60)
    assert set(statuses) <= {200, 404} and statuses.count(404) >= 3, statuses
    assert place.names() == []


def test_a_drop_needs_the_key_and_passes_the_cross_site_rules(tmp_path: Path, encoder) -> None:
    settings = ServerSettings(
        models={"mini": encoder}, api_key="k", collection_paths={"demo": tmp_path / "demo"}
    )
    Collection.create(tmp_path / "demo", encoder=encoder).close()  # a configured collection
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        assert (
            client.delete("/v1/collections/demo", headers={"Content-Type": "application/json"}).status_code
            == 401
        )
        evil = client.delete("/v1/collections/demo", headers={**WRITE, "Origin": "https://attacker.example"})
        assert evil.status_code == 403
        plain = client.delete("/v1/collections/demo", headers=KEY)  # no JSON type: a form could send it
        assert plain.status_code == 415
        assert _names(client) == ["demo"] and (tmp_path / "demo" / "collection.db").is_file()
        own_page = client.delete("/v1/collections/demo", headers={**WRITE, "Origin": LOCAL})
        assert own_page.status_code == 200, own_page.text
        assert _names(client) == []
    assert not (tmp_path / "demo").exists()


def test_a_collection_dropped_behind_the_servers_back_refuses_writes(tmp_path: Path, encoder) -> None:
    """`munjang index drop` from another shell while the server serves the folder collection: the
    server's next write answers 404 naming the drop (nothing is written to files no folder holds)."""
    place = Place("embedded", tmp_path, None)  # type: ignore[arg-type]
    with TestClient(create_app(_settings(place, encoder)), base_url=LOCAL) as client:
        _create(client, "news")
        Collection.drop(place.location("news"))
        late = client.post("/v1/collections/news/documents", json={"documents": DOCS[:1]}, headers=KEY)
        assert late.status_code == 404 and "was dropped" in late.json()["error"]["message"], late.text
        assert place.names() == [] and not Path(place.location("news")).exists()
        assert client.delete("/v1/collections/news", headers=WRITE).status_code == 404
        assert _names(client) == []
