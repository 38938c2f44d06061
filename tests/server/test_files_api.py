"""Files over HTTP: POST /v1/collections/{name}/files reads an upload by its content (not its name),
stores it with its outline, and a search hit says where it lies; broken, oversized and unknown files
are 4xx answers that store nothing."""

from __future__ import annotations

import base64

import pytest
from fastapi.testclient import TestClient

from munjang.server import ServerSettings, create_app
from tests.helpers import hostile_files as hostile
from tests.helpers import office_files as office
from tests.helpers.server import LOCAL

KEY = {"Authorization": "Bearer k"}


def upload(name: str, data: bytes, **extra: object) -> dict[str, object]:
    return {"name": name, "content": base64.b64encode(data).decode(), **extra}


@pytest.fixture
def client(encoder, tmp_path):
    settings = ServerSettings(
        models={"mini": encoder},
        api_key="k",
        collections_dir=tmp_path,
        max_body_bytes=200_000,
        max_chars_per_input=4_000,  # an upload's document is bounded like any input
    )
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        assert client.post("/v1/collections", json={"name": "docs"}, headers=KEY).status_code == 201
        yield client


def test_upload_by_content_and_search_with_location(client) -> None:
    # an HWP named .docx: the type comes from the bytes
    answer = client.post(
        "/v1/collections/docs/files", json=upload("plan.docx", office.hwp(office.SAMPLE)), headers=KEY
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["id"], body["format"], body["added"], body["pages"]) == ("plan.docx", "hwp", 1, 2)
    added = client.post(
        "/v1/collections/docs/files",
        json=upload("x.hwpx", office.hwpx(office.SAMPLE), id="plan-x"),
        headers=KEY,
    )
    assert added.json()["format"] == "hwpx" and added.json()["id"] == "plan-x"
    hits = client.post(
        "/v1/collections/docs/search",
        json={"query": "구분: 장비비 2025년", "mode": "lexical", "unit": "passage", "top_k": 20},
        headers=KEY,
    ).json()["data"]
    table_hits = [h for h in hits if "구분: 장비비" in h["text"]]
    assert table_hits and all(h["location"]["label"] == "p. 1, 표 1" for h in table_hits)
    again = client.post(
        "/v1/collections/docs/files", json=upload("plan.docx", office.hwp(office.SAMPLE)), headers=KEY
    )
    assert again.status_code == 400 and "already in the collection" in again.text


@pytest.mark.parametrize(
    ("data", "status", "needle"),
    [
        (office.hwp(office.SAMPLE, flags=0x3), 400, "encrypted HWP"),
        (office.cfb({"EncryptedPackage": b"x" * 64}), 400, "type is not one that can be read"),
        (bytes(range(256)) * 4, 400, "type is not one that can be read"),
        (office.hwpx(office.SAMPLE)[:400], 400, "type is not one that can be read"),
        (b"", 400, "empty file"),
        (b"x" * 300_000, 413, "over the limit"),
        (hostile.zip_version(office.docx(office.SAMPLE)), 400, "type is not one that can be read"),
        (hostile.docx_grid_span(), 400, "max_columns"),
        (office.docx([("p", "긴 문단 " * 1_000)]), 400, "max_chars"),  # 5,000 characters
    ],
)
def test_bad_uploads_store_nothing(client, data: bytes, status: int, needle: str) -> None:
    answer = client.post("/v1/collections/docs/files", json=upload("f.hwp", data), headers=KEY)
    assert answer.status_code == status and needle in answer.text
    assert client.get("/v1/collections/docs", headers=KEY).json()["documents"] == 0


def test_not_base64(client) -> None:
    answer = client.post("/v1/collections/docs/files", json={"name": "a", "content": "!!"}, headers=KEY)
    assert answer.status_code == 400 and "not base64" in answer.text
