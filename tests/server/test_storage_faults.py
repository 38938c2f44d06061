"""The server over collections on a full disk or read-only media (real tmpfs mounts): 507 naming the
full disk and 409 for read-only media, never a 500, and nothing committed lost."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from munjang import Collection
from munjang.server import ServerSettings, create_app
from tests.helpers.media import fill, make_readonly, small_disk
from tests.helpers.server import LOCAL

TEXTS = ["고양이가 소파에서 잔다", "주식 시장이 급락했다"]


def documents(n: int) -> list[dict[str, str]]:
    return [{"id": f"d{i}", "text": f"문장 {i}: 시장에서 고양이와 강아지가 놀았다. " * 12} for i in range(n)]


def test_a_full_disk_is_507_and_the_add_resumes(encoder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with small_disk(tmp_path / "disk") as disk:
        with Collection.create(disk / "main", encoder=encoder) as collection:
            collection.add(["a", "b"], TEXTS)
        app = create_app(ServerSettings(models={"mini": encoder}, collections_dir=disk))
        with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as http:
            filler = fill(disk)
            answer = http.post("/v1/collections/main/documents", json={"documents": documents(30)})
            assert answer.status_code == 507, answer.text
            assert answer.json()["error"]["code"] == "disk_full"
            assert "disk is full" in answer.json()["error"]["message"]
            assert http.get("/v1/collections/main").json()["documents"] == 2
            found = http.post("/v1/collections/main/search", json={"query": "고양이", "mode": "lexical"})
            assert found.status_code == 200 and found.json()["data"][0]["id"] == "a"
            created = http.post("/v1/collections", json={"name": "more"})
            assert created.status_code == 507, created.text
            filler.unlink()
            answer = http.post(
                "/v1/collections/main/documents", json={"documents": documents(30), "on_conflict": "skip"}
            )
            assert answer.status_code == 200 and answer.json()["added"] == 30
            assert http.get("/v1/collections/main").json()["documents"] == 32


def test_read_only_media_is_served_read_only(encoder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with small_disk(tmp_path / "disk") as disk:
        with Collection.create(disk / "main", encoder=encoder) as collection:
            collection.add(["a", "b"], TEXTS)
        make_readonly(disk)
        app = create_app(ServerSettings(models={"mini": encoder}, collections_dir=disk))
        with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as http:
            found = http.post("/v1/collections/main/search", json={"query": "고양이"})
            assert found.status_code == 200 and len(found.json()["data"]) == 2
            assert http.get("/v1/collections/main").json()["documents"] == 2
            for path, body in (
                ("/v1/collections/main/documents", {"documents": documents(1)}),
                ("/v1/collections/main/delete", {"ids": ["a"]}),
                ("/v1/collections", {"name": "more"}),
            ):
                answer = http.post(path, json=body)
                assert answer.status_code == 409, (path, answer.text)
                assert answer.json()["error"]["code"] == "read_only"
                assert "read-only media" in answer.json()["error"]["message"]
            assert http.get("/v1/collections/main").json()["documents"] == 2
