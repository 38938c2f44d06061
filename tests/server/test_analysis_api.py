"""A collection's analysis over HTTP (issue 73): /analyze shows each token with its part of speech
and rule; a nori dictionary and an ES synonym file load, after which searches use them; a malformed
line is a 400 naming it and changes nothing; a setting the tokenizer cannot honour is a 400."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL

KEY = {"Authorization": "Bearer k"}
DOCS = [
    {"id": "bank", "text": "카카오뱅크에서 주택담보대출 금리를 내렸다"},
    {"id": "shop", "text": "카카오 캐릭터 상품과 뱅크 샐러드 앱을 비교했다"},
]


@pytest.fixture
def client(encoder, tmp_path):
    settings = ServerSettings(models={"mini": encoder}, api_key="k", collections_dir=tmp_path)
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        assert client.post("/v1/collections", json={"name": "c"}, headers=KEY).status_code == 201
        added = client.post("/v1/collections/c/documents", json={"documents": DOCS}, headers=KEY)
        assert added.status_code == 200, added.text
        yield client


def lexical(client: TestClient, query: str) -> list[str]:
    answer = client.post("/v1/collections/c/search", json={"query": query, "mode": "lexical"}, headers=KEY)
    assert answer.status_code == 200, answer.text
    return [h["id"] for h in answer.json()["data"]]


def test_analyze_then_load_a_dictionary_and_synonyms_and_search_with_them(client) -> None:
    answer = client.post("/v1/collections/c/analyze", json={"text": "카카오뱅크에서"}, headers=KEY)
    assert answer.json()["tokens"] == [
        {"token": "카카오", "tag": "NNP", "rule": "morpheme"},
        {"token": "뱅크", "tag": "NNG", "rule": "morpheme"},
    ]
    assert set(lexical(client, "카카오뱅크")) == {"bank", "shop"}
    loaded = client.post(
        "/v1/collections/c/analysis/dictionary", json={"lines": "# nori\n카카오뱅크\n"}, headers=KEY
    )
    assert loaded.status_code == 200, loaded.text
    assert loaded.json()["reanalysed"] == 2
    assert (
        lexical(client, "카카오뱅크")[0] == "bank"
    )  # the whole word first; its parts (compounds "both") after
    synonyms = client.post(
        "/v1/collections/c/analysis/synonyms", json={"lines": "카뱅 => 카카오뱅크\n"}, headers=KEY
    )
    assert synonyms.json()["reanalysed"] == 0  # query-time: nothing stored changes
    assert lexical(client, "카뱅")[0] == "bank"
    settings = client.get("/v1/collections/c/analysis", headers=KEY).json()["analysis"]
    assert settings == {
        "user_words": [{"word": "카카오뱅크", "tag": "NNP"}],
        "synonyms": [{"terms": ["카뱅"], "to": ["카카오뱅크"]}],
    }


def test_bad_lines_and_bad_settings_are_400s_that_change_nothing(client) -> None:
    bad = client.post(
        "/v1/collections/c/analysis/dictionary", json={"lines": "토스뱅크\n삼성전자 삼성 전기\n"}, headers=KEY
    )
    assert bad.status_code == 400 and "line 2" in bad.json()["error"]["message"]
    bad = client.post("/v1/collections/c/analysis/synonyms", json={"lines": "a, b\nonly\n"}, headers=KEY)
    assert bad.status_code == 400 and "line 2" in bad.json()["error"]["message"]
    bad = client.put("/v1/collections/c/analysis", json={"typos": "nonsense"}, headers=KEY)
    assert bad.status_code == 400
    assert client.get("/v1/collections/c/analysis", headers=KEY).json()["analysis"] == {}
    assert client.post("/v1/collections/c/analyze", json={"text": "x"}).status_code == 401
