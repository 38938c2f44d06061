"""A served collection built on first use (the demo) is built after the server answers: embeddings are
served while it builds, its routes wait for it, and one that fails to build answers 503 saying why."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient

from munjang import Collection
from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL


def test_embeddings_answer_while_a_deferred_collection_builds(encoder, tmp_path):
    release, started = threading.Event(), threading.Event()
    folder = tmp_path / "demo"

    def build() -> None:
        started.set()
        assert release.wait(60)
        with Collection.create(folder, encoder=encoder) as collection:
            collection.add(["a", "b"], ["서울의 날씨가 맑다.", "A man plays the guitar."])

    settings = ServerSettings(
        models={"mini": encoder}, collection_paths={"demo": folder}, collection_builders={"demo": build}
    )
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        assert started.wait(60)
        answered = client.post("/v1/embeddings", json={"input": "첫 요청", "model": "mini"})
        assert answered.status_code == 200 and not release.is_set()  # the build is still held
        threading.Timer(0.2, release.set).start()
        hits = client.post("/v1/collections/demo/search", json={"query": "guitar", "top_k": 1})
        assert hits.status_code == 200, hits.text
        assert hits.json()["data"][0]["id"] == "b"


def test_a_deferred_collection_that_fails_to_build_answers_503(encoder, tmp_path):
    def build() -> None:
        raise OSError("disk gone")

    settings = ServerSettings(
        models={"mini": encoder},
        collection_paths={"demo": tmp_path / "demo"},
        collection_builders={"demo": build},
    )
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        failed = client.post("/v1/collections/demo/search", json={"query": "guitar"})
        assert failed.status_code == 503 and "disk gone" in failed.text
        assert client.post("/v1/embeddings", json={"input": "x", "model": "mini"}).status_code == 200
