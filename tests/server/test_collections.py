"""Collections over HTTP: create, add, search (dense / BM25 / hybrid, filters), delete, info, reopen;
every bad request is a 4xx naming the problem, and nothing stored is lost."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from munjang import Collection
from munjang.server import ServerSettings, create_app
from tests.helpers.collection_backends import fresh_database, qdrant_url
from tests.helpers.server import LOCAL

KEY = {"Authorization": "Bearer k"}
DOCS = [
    {"id": "d1", "text": "서울의 날씨가 오늘은 맑고 따뜻합니다.", "metadata": {"lang": "ko", "year": 2024}},
    {"id": "d2", "text": "주식 시장이 급락했다.", "metadata": {"lang": "ko", "year": 2023}},
    {"id": "d3", "text": "The weather in Seoul is sunny today.", "metadata": {"lang": "en", "year": 2024}},
    {"id": "d4", "text": "A man is playing a guitar.", "metadata": {"lang": "en", "year": 2022}},
]


@pytest.fixture(params=["embedded", "postgres", "qdrant"])
def served(encoder, tmp_path, request):
    """A server that creates collections in a folder, in a PostgreSQL database of its own, or in
    Qdrant's local mode, and a function that opens one of them directly. Requests may take as long as
    a busy machine needs (UMAP took 24 s on a loaded one: past the default 30 s deadline with its import)."""
    slow = {"request_timeout_s": 600.0, "max_queue_wait_s": 600.0}
    if request.param == "embedded":
        settings = ServerSettings(models={"mini": encoder}, api_key="k", collections_dir=tmp_path, **slow)
        opener = lambda name: Collection.open(tmp_path / name, encoder=encoder)  # noqa: E731
    else:
        db = (
            qdrant_url(tmp_path)
            if request.param == "qdrant"
            else fresh_database(request.getfixturevalue("postgres_url"))
        )
        settings = ServerSettings(models={"mini": encoder}, api_key="k", collections_db=db, **slow)
        opener = lambda name: Collection.open(name, backend=db, encoder=encoder)  # noqa: E731
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        yield client, opener


def test_create_add_search_delete_and_reopen(served, encoder):
    client, opener = served
    created = client.post("/v1/collections", json={"name": "news"}, headers=KEY)
    assert created.status_code == 201, created.text
    assert created.json()["documents"] == 0
    added = client.post("/v1/collections/news/documents", json={"documents": DOCS}, headers=KEY)
    assert added.json() == {"added": 4, "updated": 0, "skipped": 0}
    hits = client.post(
        "/v1/collections/news/search", json={"query": "Seoul weather", "top_k": 2}, headers=KEY
    )
    assert hits.status_code == 200, hits.text
    assert hits.json()["data"][0]["id"] in {"d1", "d3"}
    assert {"dense", "lexical"} <= set(hits.json()["data"][0]["scores"])
    filtered = client.post(
        "/v1/collections/news/search",
        json={"query": "weather", "mode": "dense", "filter": {"lang": "ko"}, "top_k": 5},
        headers=KEY,
    ).json()["data"]
    assert {h["id"] for h in filtered} == {"d1", "d2"}
    lexical = client.post(
        "/v1/collections/news/search", json={"query": "guitar", "mode": "lexical"}, headers=KEY
    ).json()["data"]
    assert lexical[0]["id"] == "d4"
    assert client.post("/v1/collections/news/delete", json={"ids": ["d4", "nope"]}, headers=KEY).json() == {
        "deleted": 1
    }
    info = client.get("/v1/collections/news", headers=KEY).json()
    assert info["documents"] == 3 and info["name"] == "news"
    listed = client.get("/v1/collections", headers=KEY).json()["data"]
    assert [c["name"] for c in listed] == ["news"]
    client.close()
    reopened = opener("news")
    try:
        assert sorted(reopened.ids()) == ["d1", "d2", "d3"]
    finally:
        reopened.close()


def test_a_server_serves_the_collections_it_finds(encoder, tmp_path):
    col = Collection.create(tmp_path / "found", encoder=encoder)
    col.add(["a"], ["a document about cats"])
    col.close()
    app = create_app(ServerSettings(models={"mini": encoder}, collections_dir=tmp_path))
    with TestClient(app, base_url=LOCAL) as client:
        hits = client.post("/v1/collections/found/search", json={"query": "cats", "mode": "dense"}).json()
    assert hits["data"][0]["id"] == "a"


@pytest.mark.parametrize(
    "path,body,status,param",
    [
        ("/v1/collections", {"name": "bad name!"}, 400, "name"),
        ("/v1/collections", {"name": "x", "model": "nope"}, 404, "model"),
        ("/v1/collections", {"name": "x", "index": "ivf"}, 422, "index"),
        ("/v1/collections/missing/search", {"query": "q"}, 404, "name"),
        ("/v1/collections/news/search", {"query": ""}, 400, "query"),
        ("/v1/collections/news/search", {"query": "q", "top_k": 0}, 422, "top_k"),
        ("/v1/collections/news/search", {"query": "q", "mode": "fuzzy"}, 422, "mode"),
        ("/v1/collections/news/search", {"query": "q", "rerank": True}, 400, "rerank"),
        ("/v1/collections/news/documents", {"documents": []}, 400, "documents"),
        (
            "/v1/collections/news/documents",
            {"documents": [{"id": "z", "text": " "}]},
            400,
            "documents[0].text",
        ),
        ("/v1/collections/news/documents", {"documents": [{"text": "no id"}]}, 422, "documents[0].id"),
        ("/v1/collections/missing/map", {}, 404, "name"),
        ("/v1/collections/news/map", {"limit": 0}, 422, "limit"),
        ("/v1/collections/news/map", {"method": "tsne"}, 422, "method"),
        ("/v1/collections/news/map", {"filter": {"year": {"$near": 1}}}, 400, "filter"),
        ("/v1/collections/news/search", {"query": "q", "filter": {"year": {"$near": 1}}}, 400, "filter"),
        ("/v1/collections/news/search", {"query": "q", "weights": [1e308, 1e308]}, 400, "weights"),
    ],
)
def test_bad_requests_are_named(served, path, body, status, param):
    client, _ = served
    client.post("/v1/collections", json={"name": "news"}, headers=KEY)
    response = client.post(path, json=body, headers=KEY)
    assert response.status_code == status, response.text
    assert response.json()["error"]["param"] == param


def test_conflicts_and_filters_are_checked_without_losing_data(served):
    client, _ = served
    client.post("/v1/collections", json={"name": "news"}, headers=KEY)
    client.post("/v1/collections/news/documents", json={"documents": DOCS[:2]}, headers=KEY)
    again = client.post("/v1/collections/news/documents", json={"documents": DOCS[:3]}, headers=KEY)
    assert again.status_code == 400 and "d1" in again.json()["error"]["message"]
    assert client.get("/v1/collections/news", headers=KEY).json()["documents"] == 2
    skip = {"documents": DOCS[:3], "on_conflict": "skip"}
    assert client.post("/v1/collections/news/documents", json=skip, headers=KEY).json()["added"] == 1
    bad_filter = client.post(
        "/v1/collections/news/search", json={"query": "q", "filter": {"year": {"$regex": "x"}}}, headers=KEY
    )
    assert bad_filter.status_code == 400
    assert client.post("/v1/collections", json={"name": "news"}, headers=KEY).status_code == 409
    assert client.get("/v1/collections", headers={}).status_code == 401


def test_hits_name_the_query_terms_they_contain(served):
    client, _ = served
    client.post("/v1/collections", json={"name": "news"}, headers=KEY)
    client.post("/v1/collections/news/documents", json={"documents": DOCS}, headers=KEY)
    hits = client.post(
        "/v1/collections/news/search", json={"query": "서울 날씨 weather", "top_k": 4}, headers=KEY
    ).json()["data"]
    terms = {h["id"]: h["matched_terms"] for h in hits}
    assert set(terms["d1"]) == {"서울", "날씨"}  # Korean morphemes, in query order
    assert terms["d3"] == ["weather"]
    assert terms["d2"] == [] and terms["d4"] == []


def test_map_projects_the_stored_vectors_with_pca(served, encoder):
    import numpy as np
    from sklearn.decomposition import PCA

    from munjang.applications.projection import umap_available

    client, _ = served
    client.post("/v1/collections", json={"name": "news"}, headers=KEY)
    client.post("/v1/collections/news/documents", json={"documents": DOCS}, headers=KEY)
    answer = client.post("/v1/collections/news/map", json={"method": "pca"}, headers=KEY)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["method"] == "pca"
    points = body["points"]
    assert [p["id"] for p in points] == ["d1", "d2", "d3", "d4"]
    assert points[0]["text"] == DOCS[0]["text"] and points[0]["metadata"] == DOCS[0]["metadata"]
    got = np.array([[p["x"], p["y"]] for p in points])
    want = PCA(2).fit_transform(encoder.encode([d["text"] for d in DOCS]))
    np.testing.assert_allclose(np.abs(got), np.abs(want), atol=1e-4)  # PCA is defined up to sign
    limited = client.post(
        "/v1/collections/news/map", json={"limit": 2, "filter": {"lang": "en"}}, headers=KEY
    )
    assert [p["id"] for p in limited.json()["points"]] == ["d3", "d4"]
    umap = client.post("/v1/collections/news/map", json={"method": "umap"}, headers=KEY)
    if umap_available():
        assert umap.status_code == 200, umap.text
        assert umap.json()["method"] == "umap"
    else:
        assert umap.status_code == 400 and "umap-learn" in umap.json()["error"]["message"]


def test_long_documents_are_searched_as_documents_showing_the_matched_passage(encoder, tmp_path):
    settings = ServerSettings(models={"mini": encoder}, api_key="k", collections_dir=tmp_path)
    page = " ".join(
        [
            "서울은 대한민국의 수도이며 인구가 가장 많은 도시이다.",
            "부산은 남쪽 바다에 있는 항구 도시로 해운대 해수욕장이 유명하다.",
            "제주도는 화산섬으로 한라산이 섬의 중심에 있다.",
        ]
        * 4
    )
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        created = client.post("/v1/collections", json={"name": "pages", "chunk_tokens": 32}, headers=KEY)
        assert created.status_code == 201, created.text
        assert created.json()["chunking"]["max_tokens"] == 32
        docs = [{"id": "page", "text": page}, {"id": "line", "text": "강아지가 공을 쫓는다."}]
        client.post("/v1/collections/pages/documents", json={"documents": docs}, headers=KEY)
        info = client.get("/v1/collections/pages", headers=KEY).json()
        assert info["documents"] == 2 and info["passages"] > 3
        hits = client.post(
            "/v1/collections/pages/search", json={"query": "한라산 화산섬", "top_k": 5}, headers=KEY
        ).json()["data"]
        assert [h["id"] for h in hits].count("page") == 1
        top = next(h for h in hits if h["id"] == "page")
        span = top["passage"]
        assert span["partial"] and page[span["start"] : span["end"]] == top["text"]
        assert "한라산" in top["text"] and "한라산" in top["matched_terms"]
        passages = client.post(
            "/v1/collections/pages/search",
            json={"query": "한라산 화산섬", "top_k": 10, "unit": "passage", "mode": "lexical"},
            headers=KEY,
        ).json()["data"]
        assert len([h for h in passages if h["id"] == "page"]) > 1
        bad = client.post("/v1/collections", json={"name": "x", "chunk_tokens": 3}, headers=KEY)
        assert bad.status_code == 422 and "chunk_tokens" in bad.json()["error"]["message"]
        # Without settings a collection gets the library's passages; BM25 may read a passage alone.
        plain = client.post("/v1/collections", json={"name": "plain"}, headers=KEY).json()["chunking"]
        assert plain["max_tokens"] == 128 and plain["lexical_context"] == "window"
        request = {"name": "alone", "lexical_context": "passage"}
        alone = client.post("/v1/collections", json=request, headers=KEY)
        assert alone.status_code == 201 and alone.json()["chunking"]["lexical_context"] == "passage"
        bad = client.post("/v1/collections", json={"name": "y", "lexical_context": "page"}, headers=KEY)
        assert bad.status_code == 422 and "lexical_context" in bad.json()["error"]["message"]


def test_serving_a_collection_loads_kiwi_before_any_write(encoder, tmp_path, monkeypatch):
    # Kiwi's first load holds the interpreter lock for a second or more: done when the collection
    # is opened, it never stalls a search during a write.
    from munjang.search.index import tokenizers

    monkeypatch.setattr(tokenizers, "_kiwi_cache", {})
    Collection.create(tmp_path / "ko", encoder=encoder).close()
    app = create_app(ServerSettings(models={"mini": encoder}, collections_dir=tmp_path))
    with TestClient(app, base_url=LOCAL):
        assert tokenizers._kiwi_cache
