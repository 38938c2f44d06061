"""A collection's multi-vector and bge-m3 search modes over HTTP: the Python API's results, and a mode
the collection lacks (or bad m3 weights) a 400 naming the field, never a 500."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient

from munjang.search.collection.collection import Collection
from munjang.server import ServerSettings, create_app
from tests.helpers.m3 import tiny_m3
from tests.helpers.multi_vector import st_multi_vector
from tests.helpers.server import LOCAL

TEXTS = ["the cat sat on the mat", "서울에 비가 온다", "the sun is on the road"]


def test_collections_search_in_multi_vector_and_m3_modes(encoder, tmp_path: Path) -> None:
    colbert = st_multi_vector(tmp_path / "colbert")
    with Collection.create(
        tmp_path / "mv", encoder=encoder, tokenizer="word", multi_vector_model=colbert
    ) as c:
        c.add(["a", "b", "c"], TEXTS)
        want_mv = [(h.id, h.score) for h in c.search("cat mat", k=2, mode="multi_vector")]
    with Collection.create(tmp_path / "m3", m3_model=tiny_m3(tmp_path / "bge-m3"), tokenizer="word") as c:
        c.add(["a", "b", "c"], TEXTS)
        want_m3 = [(h.id, h.score) for h in c.search("cat mat", k=2, mode="m3")]
    Collection.create(tmp_path / "plain", encoder=encoder, tokenizer="word").close()
    paths = {name: tmp_path / name for name in ("mv", "m3", "plain")}
    with TestClient(
        create_app(ServerSettings(models={"mini": encoder}, collection_paths=paths)), base_url=LOCAL
    ) as client:

        def search(name: str, **body):
            return client.post(
                f"/v1/collections/{name}/search", json={"query": "cat mat", "top_k": 2, **body}
            )

        for name, mode, want in (("mv", "multi_vector", want_mv), ("m3", "m3", want_m3)):
            response = search(name, mode=mode)
            assert response.status_code == 200, response.text
            got = [(d["id"], d["score"]) for d in response.json()["data"]]
            assert [i for i, _ in got] == [i for i, _ in want]
            np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-5)
        hybrid = search("mv", weights=[1, 1, 1])
        assert hybrid.status_code == 200 and "multi_vector" in hybrid.json()["data"][0]["scores"]
        dense_only = search("m3", mode="m3", weights=[1, 0, 0])
        assert dense_only.status_code == 200
        for name, body, param in (
            ("mv", {"mode": "m3"}, "mode"),
            ("m3", {"mode": "m3", "weights": [1, 1]}, "weights"),
            ("mv", {"mode": "colbert"}, "mode"),
        ):
            response = search(name, **body)
            assert response.status_code in (400, 422) and response.json()["error"]["param"] == param, (
                response.text
            )
        plain = client.post("/v1/collections/plain/search", json={"query": "cat", "mode": "multi_vector"})
        assert plain.status_code == 400 and plain.json()["error"]["param"] == "mode"
