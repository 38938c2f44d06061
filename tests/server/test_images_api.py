"""Images over HTTP on a tiny CLIP: search a collection by an uploaded image (base64 or a data: URI),
fetch a stored image and its thumbnail by document id; bad images, text-model collections, unknown or
non-image documents and path tricks are 4xx answers naming the problem."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

import munjang
from munjang.search import Collection
from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL
from tests.helpers.tiny_clip import image_collection, save_st_clip

KEY = {"Authorization": "Bearer k"}


@pytest.fixture(scope="module")
def client(encoder, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    work = tmp_path_factory.mktemp("images-api")
    clip = munjang.load_encoder(save_st_clip(work / "clip"), device="cpu")
    pictures, files = image_collection(work / "pictures", clip)
    with Collection.create(work / "texts", encoder=encoder) as col:
        col.add(["t1"], ["a text document"])
    settings = ServerSettings(
        models={"clip": clip, "mini": encoder},
        api_key="k",
        collection_paths={"pictures": pictures, "texts": work / "texts"},
    )
    with TestClient(create_app(settings), base_url=LOCAL) as test_client:
        test_client.clip = clip  # type: ignore[attr-defined]
        yield test_client, files


def _search(client: TestClient, name: str, body: dict) -> object:  # type: ignore[type-arg]
    return client.post(f"/v1/collections/{name}/search", json=body, headers=KEY)


def test_search_by_image_and_fetch_the_stored_images(client) -> None:  # type: ignore[no-untyped-def]
    http, files = client
    listed = {c["name"]: c["images"] for c in http.get("/v1/collections", headers=KEY).json()["data"]}
    assert listed == {"pictures": True, "texts": False}
    encoded = base64.b64encode(files[3].read_bytes()).decode()
    for image in (encoded, "data:image/png;base64," + encoded):
        answer = _search(http, "pictures", {"image": image, "top_k": 3})
        assert answer.status_code == 200, answer.text
        hits = answer.json()["data"]
        assert hits[0]["id"] == "image3.png" and hits[0]["score"] == pytest.approx(1.0, abs=1e-5)
        assert set(hits[0]["scores"]) == {"dense"} and hits[0]["matched_terms"] == []
    by_text = _search(http, "pictures", {"query": "the cat", "top_k": 6})
    assert by_text.status_code == 200 and len(by_text.json()["data"]) == 6

    original = http.get("/v1/collections/pictures/images/image3.png", headers=KEY)
    assert original.status_code == 200 and original.headers["content-type"] == "image/png"
    assert original.content == files[3].read_bytes()
    thumb = http.get("/v1/collections/pictures/images/image3.png?thumbnail=16", headers=KEY)
    assert thumb.status_code == 200 and max(Image.open(io.BytesIO(thumb.content)).size) == 16
    assert http.get("/v1/collections/pictures/images/image3.png").status_code == 401


@pytest.mark.parametrize(
    ("name", "body", "param"),
    [
        ("pictures", {"image": "not base64!"}, "image"),
        ("pictures", {"image": base64.b64encode(b"plain text, not pixels").decode()}, "image"),
        ("pictures", {"image": "A" * 12_000_000}, None),  # over the request body limit
        ("pictures", {}, "query"),
        ("pictures", {"query": "cat", "image": "AAAA"}, "query"),
        ("texts", {"image": None}, "image"),
    ],
)
def test_bad_image_queries_are_4xx(client, name: str, body: dict, param: str | None) -> None:  # type: ignore[no-untyped-def,type-arg]
    http, files = client
    if body == {"image": None}:
        body = {"image": base64.b64encode(files[0].read_bytes()).decode()}
    answer = _search(http, name, body)
    assert 400 <= answer.status_code < 500, answer.text
    if param is not None:
        assert answer.json()["error"]["param"] == param


@pytest.fixture(scope="module")
def huge_png() -> str:
    """An 8192x8192 PNG: a few hundred KB on the wire, 200 MB once decoded."""
    out = io.BytesIO()
    Image.new("RGB", (8192, 8192)).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def test_an_image_for_a_text_collection_is_refused_before_decoding(client, huge_png, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from munjang.server import collections_api

    decoded: list[int] = []
    real = collections_api.decode_image_query
    monkeypatch.setattr(
        collections_api, "decode_image_query", lambda *a, **k: decoded.append(1) or real(*a, **k)
    )
    http, _ = client
    answer = _search(http, "texts", {"image": huge_png})
    assert answer.status_code == 400 and "CLIP" in answer.json()["error"]["message"]
    assert decoded == []


def test_an_oversized_query_image_is_refused_by_its_header(client, huge_png) -> None:  # type: ignore[no-untyped-def]
    http, _ = client
    answer = _search(http, "pictures", {"image": huge_png})
    assert answer.status_code == 400 and "8192x8192 pixels" in answer.json()["error"]["message"]


def test_no_heap_address_reaches_a_client(client) -> None:  # type: ignore[no-untyped-def]
    http, _ = client
    answer = _search(http, "pictures", {"image": base64.b64encode(b"plain text, not pixels").decode()})
    assert answer.status_code == 400
    assert "0x" not in answer.text and "object at" not in answer.text


def test_hybrid_image_search_is_refused(client) -> None:  # type: ignore[no-untyped-def]
    http, files = client
    body = {"image": base64.b64encode(files[0].read_bytes()).decode(), "mode": "hybrid"}
    answer = _search(http, "pictures", body)
    assert answer.status_code == 400 and "dense mode" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/v1/collections/pictures/images/nope.png",
        "/v1/collections/texts/images/t1",
        "/v1/collections/pictures/images/..%2F..%2Fetc%2Fpasswd",
        "/v1/collections/pictures/images/image1.png?thumbnail=5000",
        "/v1/collections/nowhere/images/image1.png",
    ],
)
def test_only_stored_image_documents_are_served(client, path: str) -> None:  # type: ignore[no-untyped-def]
    http, _ = client
    answer = http.get(path, headers=KEY)
    assert answer.status_code in (400, 404), answer.text
    assert answer.json()["error"]["message"]


def test_a_clip_model_embeds_texts_over_the_embeddings_api(client) -> None:  # type: ignore[no-untyped-def]
    http, _ = client
    texts = ["the cat", "a dog on the mat"]
    answer = http.post("/v1/embeddings", json={"model": "clip", "input": texts}, headers=KEY)
    assert answer.status_code == 200, answer.text
    vectors = np.array([row["embedding"] for row in answer.json()["data"]])
    np.testing.assert_allclose(vectors, http.clip.encode(texts), atol=1e-5)
    assert answer.json()["usage"]["prompt_tokens"] > len(texts)
    too_long = {"model": "clip", "input": ["z" * 200], "truncate": False}
    refused = http.post("/v1/embeddings", json=too_long, headers=KEY)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "input_too_long"


def test_the_python_client_searches_by_image_and_fetches_images(client, request) -> None:  # type: ignore[no-untyped-def]
    http, files = client
    remote = munjang.Client(api_key="k", http=http)
    request.addfinalizer(lambda: http.headers.pop("Authorization"))  # the client set it on the shared one
    hits = remote.search_image("pictures", files[4], top_k=2)
    assert hits[0]["id"] == "image4.png"
    assert remote.search_image("pictures", files[4].read_bytes(), top_k=1)[0]["id"] == "image4.png"
    assert remote.image("pictures", "image4.png") == files[4].read_bytes()
    assert max(Image.open(io.BytesIO(remote.image("pictures", "image4.png", thumbnail=20))).size) == 20
    with pytest.raises(munjang.ServerError) as missing:
        remote.image("pictures", "nope.png")
    assert missing.value.status == 404
