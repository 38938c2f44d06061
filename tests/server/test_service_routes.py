"""The alias routes (/v1/aliases; every collection route resolves an alias when its request
arrives) and the snapshot routes (take, list, download, restore as a served collection)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient

from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL, live_server

KEY = {"Authorization": "Bearer k"}


def _create(client: TestClient, name: str, texts: list[str]) -> None:
    assert client.post("/v1/collections", json={"name": name}, headers=KEY).status_code == 201
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)]
    response = client.post(f"/v1/collections/{name}/documents", json={"documents": docs}, headers=KEY)
    assert response.status_code == 200, response.text


def test_an_alias_is_set_resolved_switched_and_removed(encoder: Any, tmp_path: Path) -> None:
    settings = ServerSettings(models={"mini": encoder}, api_key="k", collections_dir=tmp_path)
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        _create(client, "v1", ["고양이가 잔다"])
        _create(client, "v2", ["고양이가 잔다", "강아지가 뛴다"])
        assert client.put("/v1/aliases/prod", json={"collection": "v1"}).status_code == 401
        response = client.put("/v1/aliases/prod", json={"collection": "v1"}, headers=KEY)
        assert response.json() == {"alias": "prod", "collection": "v1", "previous": None}
        assert client.get("/v1/collections/prod", headers=KEY).json()["documents"] == 1
        response = client.put("/v1/aliases/prod", json={"collection": "v2"}, headers=KEY)
        assert response.json()["previous"] == "v1"
        search = {"query": "강아지", "mode": "lexical"}
        hits = client.post("/v1/collections/prod/search", json=search, headers=KEY).json()
        assert [h["id"] for h in hits["data"]] == ["d1"]
        assert client.get("/v1/aliases", headers=KEY).json()["data"] == [
            {"alias": "prod", "collection": "v2"}
        ]
        assert client.put("/v1/aliases/v1", json={"collection": "v2"}, headers=KEY).status_code == 409
        assert client.put("/v1/aliases/x", json={"collection": "nope"}, headers=KEY).status_code == 404
        assert (
            client.delete("/v1/aliases/prod", headers={**KEY, "Content-Type": "application/json"}).status_code
            == 200
        )
        assert client.get("/v1/collections/prod", headers=KEY).status_code == 404
        assert (
            client.delete("/v1/aliases/prod", headers={**KEY, "Content-Type": "application/json"}).status_code
            == 404
        )


def test_a_snapshot_is_taken_listed_downloaded_and_restored_as_a_served_collection(
    encoder: Any, tmp_path: Path
) -> None:
    settings = ServerSettings(models={"mini": encoder}, api_key="k", collections_dir=tmp_path)
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        _create(client, "v1", ["고양이가 잔다", "강아지가 뛴다"])
        assert client.post("/v1/collections/v1/snapshots", json={}).status_code == 401
        taken = client.post("/v1/collections/v1/snapshots", json={}, headers=KEY)
        assert taken.status_code == 201, taken.text
        assert taken.json()["counts"] == {"documents": 2, "passages": 2}
        file = taken.json()["snapshot"]
        listed = client.get("/v1/collections/v1/snapshots", headers=KEY).json()["data"]
        assert [s["snapshot"] for s in listed] == [file]
        body = client.get(f"/v1/collections/v1/snapshots/{file}", headers=KEY)
        assert (
            body.status_code == 200 and body.content == (tmp_path / ".snapshots" / "v1" / file).read_bytes()
        )
        assert client.get("/v1/collections/v1/snapshots/..%2Fv1.snapshot", headers=KEY).status_code == 404
        restored = client.post(
            f"/v1/collections/v1/snapshots/{file}/restore", json={"target": "v2"}, headers=KEY
        )
        assert restored.status_code == 201, restored.text
        assert restored.json() == {"name": "v2", "documents": 2, "passages": 2}
        again = client.post(
            f"/v1/collections/v1/snapshots/{file}/restore", json={"target": "v2"}, headers=KEY
        )
        assert again.status_code == 409
        hits = client.post(
            "/v1/collections/v2/search", json={"query": "강아지", "mode": "lexical"}, headers=KEY
        )
        assert [h["id"] for h in hits.json()["data"]] == ["d1"]


TAR = {**KEY, "Content-Type": "application/x-tar"}
JSON = {**KEY, "Content-Type": "application/json"}


def _snapshot_bytes(client: TestClient, tmp_path: Path, name: str) -> tuple[str, bytes]:
    taken = client.post(f"/v1/collections/{name}/snapshots", json={}, headers=KEY)
    assert taken.status_code == 201, taken.text
    file = taken.json()["snapshot"]
    return file, (tmp_path / ".snapshots" / name / file).read_bytes()


def test_a_snapshot_is_deleted(encoder: Any, tmp_path: Path) -> None:
    settings = ServerSettings(models={"mini": encoder}, api_key="k", collections_dir=tmp_path)
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        _create(client, "v1", ["고양이가 잔다"])
        file, _ = _snapshot_bytes(client, tmp_path, "v1")
        url = f"/v1/collections/v1/snapshots/{file}"
        assert client.delete(url, headers={"Content-Type": "application/json"}).status_code == 401
        response = client.delete(url, headers=JSON)
        assert response.status_code == 200 and response.json() == {"snapshot": file, "deleted": True}
        assert not (tmp_path / ".snapshots" / "v1" / file).exists()
        assert client.get("/v1/collections/v1/snapshots", headers=KEY).json()["data"] == []
        assert client.delete(url, headers=JSON).status_code == 404
        assert client.delete("/v1/collections/v1/snapshots/v1.snapshot", headers=JSON).status_code == 404


def test_an_uploaded_archive_is_restored_as_a_served_collection(encoder: Any, tmp_path: Path) -> None:
    settings = ServerSettings(models={"mini": encoder}, api_key="k", collections_dir=tmp_path)
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        _create(client, "v1", ["고양이가 잔다", "강아지가 뛴다"])
        _, archive = _snapshot_bytes(client, tmp_path, "v1")
        assert client.post("/v1/collections/v2/restore", content=archive).status_code in (401, 415)
        as_json = client.post("/v1/collections/v2/restore", content=archive, headers=JSON)
        assert as_json.status_code == 415  # the archive route takes application/x-tar only
        restored = client.post("/v1/collections/v2/restore", content=archive, headers=TAR)
        assert restored.status_code == 201, restored.text
        assert restored.json() == {"name": "v2", "documents": 2, "passages": 2}
        search = {"query": "강아지가", "mode": "lexical"}
        hits = client.post("/v1/collections/v2/search", json=search, headers=KEY)
        assert [h["id"] for h in hits.json()["data"]] == ["d1"]
        again = client.post("/v1/collections/v2/restore", content=archive, headers=TAR)
        assert again.status_code == 409 and again.json()["error"]["code"] == "already_exists"
        assert not list((tmp_path / ".snapshots" / ".uploads").iterdir())  # the upload is removed


def test_a_bad_or_oversized_upload_is_refused_and_nothing_is_made(encoder: Any, tmp_path: Path) -> None:
    settings = ServerSettings(models={"mini": encoder}, api_key="k", collections_dir=tmp_path)
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        _create(client, "v1", ["고양이가 잔다", "강아지가 뛴다"])
        _, archive = _snapshot_bytes(client, tmp_path, "v1")
        flipped = bytearray(archive)
        flipped[1024 + 100] ^= 0xFF  # inside the first shard
        for bad in (archive[: len(archive) // 2], bytes(flipped), b"not a tar at all"):
            response = client.post("/v1/collections/v3/restore", content=bad, headers=TAR)
            assert response.status_code == 400, response.text
            assert response.json()["error"]["code"] == "bad_snapshot"
            assert not (tmp_path / "v3").exists()
            assert client.get("/v1/collections/v3", headers=KEY).status_code == 404
        escape = client.post("/v1/collections/..%2Fx/restore", content=archive, headers=TAR)
        assert 400 <= escape.status_code < 500 and not (tmp_path.parent / "x").exists()
    small = ServerSettings(
        models={"mini": encoder}, api_key="k", collections_dir=tmp_path, max_snapshot_bytes=len(archive) - 1
    )
    with TestClient(create_app(small), base_url=LOCAL) as client:
        response = client.post("/v1/collections/v3/restore", content=archive, headers=TAR)
        assert response.status_code == 413 and response.json()["error"]["code"] == "body_too_large"
        chunks = (archive[i : i + 4096] for i in range(0, len(archive), 4096))  # no Content-Length
        response = client.post("/v1/collections/v3/restore", content=chunks, headers=TAR)
        assert response.status_code == 413
        assert not (tmp_path / "v3").exists()
        assert not list((tmp_path / ".snapshots" / ".uploads").iterdir())


def test_a_second_restore_into_the_same_name_waits_its_turn(encoder: Any, tmp_path: Path) -> None:
    """One restore at a time per collection: while an upload into `v2` is still arriving, another
    is refused with 409 snapshot_busy; the first then completes."""
    settings = ServerSettings(models={"mini": encoder}, api_key="k", collections_dir=tmp_path)
    app = create_app(settings)
    with TestClient(app, base_url=LOCAL) as client:
        _create(client, "v1", ["고양이가 잔다", "강아지가 뛴다"])
        _, archive = _snapshot_bytes(client, tmp_path, "v1")
    release = threading.Event()

    def slow_body() -> Iterator[bytes]:
        yield archive[:4096]
        release.wait(timeout=60)
        yield archive[4096:]

    uploads = tmp_path / ".snapshots" / ".uploads"
    with live_server(app) as url, httpx.Client(base_url=url, headers=TAR, timeout=60) as http:
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(http.post, "/v1/collections/v2/restore", content=slow_body())
            deadline = time.monotonic() + 30
            while not (uploads.is_dir() and any(uploads.iterdir())):  # the first holds the name
                assert time.monotonic() < deadline and not first.done()
                time.sleep(0.01)
            second = http.post("/v1/collections/v2/restore", content=archive)
            release.set()
            assert second.status_code == 409 and second.json()["error"]["code"] == "snapshot_busy"
            assert first.result().status_code == 201, first.result().text
        assert http.get("/v1/collections/v2").json()["documents"] == 2
