"""One request's adding is bounded by characters, not only by its body's bytes: every character a
request adds is analysed and encoded (issue 70: 32 CPU-s for one 100,000-character document, and
the 8 MB body bound admitted ~80 of them), so past `max_chars_per_add` a `/documents` add is a 413
naming the setting and the figures, and an upload a 400, both before anything is analysed or
encoded, and nothing is stored."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from fastapi.testclient import TestClient

from munjang.search.collection.collection import Collection
from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL


@pytest.fixture
def served(encoder, tmp_path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """A client of a server whose adds may hold 5,000 characters (inputs up to 4,000 each), and
    the lengths of what reached `Collection.add` (the costly step)."""
    reached: list[int] = []
    add = Collection.add

    def spy(self: Collection, ids: Any, texts: Any, *args: Any, **kwargs: Any) -> Any:
        reached.append(sum(len(t) for t in texts))
        return add(self, ids, texts, *args, **kwargs)

    monkeypatch.setattr(Collection, "add", spy)
    settings = ServerSettings(
        models={"mini": encoder}, collections_dir=tmp_path, max_chars_per_input=4_000, max_chars_per_add=5_000
    )
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        assert client.post("/v1/collections", json={"name": "docs"}).status_code == 201
        yield client, reached


def documents(*lengths: int) -> dict[str, Any]:
    return {"documents": [{"id": f"d{i}", "text": "가나다라 " * (n // 5)} for i, n in enumerate(lengths)]}


def test_an_add_over_the_character_budget_is_413_before_any_is_encoded(served) -> None:  # type: ignore[no-untyped-def]
    client, reached = served
    answer = client.post("/v1/collections/docs/documents", json=documents(2_000, 2_000, 2_000))
    assert answer.status_code == 413, answer.text
    error = answer.json()["error"]
    assert error["param"] == "documents" and error["code"] == "too_many_characters"
    assert "6,000 characters" in error["message"] and "5,000" in error["message"]
    assert "max_chars_per_add" in error["message"]
    assert reached == []  # refused before the collection analysed or encoded anything
    assert client.get("/v1/collections/docs").json()["documents"] == 0

    answer = client.post("/v1/collections/docs/documents", json=documents(2_000, 2_000))
    assert answer.status_code == 200 and answer.json()["added"] == 2
    assert reached == [4_000]


def test_many_small_documents_count_together(served) -> None:  # type: ignore[no-untyped-def]
    """The shape does not matter: 60 documents of 100 characters pass their per-input bound one by
    one and the budget together."""
    client, reached = served
    answer = client.post("/v1/collections/docs/documents", json=documents(*[100] * 60))
    assert answer.status_code == 413 and reached == []
    answer = client.post("/v1/collections/docs/documents", json=documents(*[100] * 50))
    assert answer.status_code == 200 and reached == [5_000]


def test_an_upload_reads_no_further_than_the_budget(encoder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An uploaded file's text is one request's add: read no further than `max_chars_per_add`,
    even where one input may be longer, and refused with the reader's limit named."""
    settings = ServerSettings(
        models={"mini": encoder}, collections_dir=tmp_path, max_chars_per_input=8_000, max_chars_per_add=5_000
    )
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        assert client.post("/v1/collections", json={"name": "docs"}).status_code == 201
        answers = {}
        for chars in (6_000, 4_000):
            text = ("가나다라 " * (chars // 5)).encode()
            body = {"name": "notes.txt", "content": base64.b64encode(text).decode()}
            answers[chars] = client.post("/v1/collections/docs/files", json=body)
        assert answers[6_000].status_code == 400 and "max_chars" in answers[6_000].json()["error"]["message"]
        assert answers[4_000].status_code == 200, answers[4_000].text
        assert client.get("/v1/collections/docs").json()["documents"] == 1
