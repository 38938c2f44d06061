"""Texts sent decomposed (NFD Hangul, as macOS and some editors write it) are read as the composed
text they spell (NFC), on every text route as in collections: the same words embed, score and match
alike whatever form they came in. And an instruction of NULs alone is empty, as a rerank's is."""

from __future__ import annotations

import unicodedata

import numpy as np
import pytest
from fastapi.testclient import TestClient

from munjang import Collection
from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL

WORDS = "고양이가 창가에서 잠을 잔다"
NFD = unicodedata.normalize("NFD", WORDS)


@pytest.fixture(scope="module")
def client(e5_path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """multilingual-e5-small: its tokenizer reads NFD Hangul as jamo (cosine 0.79 to the same words)."""
    from munjang import load_encoder

    encoder = load_encoder(str(e5_path), device="cpu")
    encoder.set_backend("torch", "fp32")
    where = tmp_path_factory.mktemp("unicode")
    with Collection.create(where / "main", str(e5_path), encoder=encoder) as collection:
        collection.add(["cat", "stock"], [WORDS, "주식 시장이 급락했다"])
    app = create_app(ServerSettings(models={"e5": encoder}, collections_dir=where))
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as http:
        yield http


def test_nfd_and_nfc_embed_alike(client) -> None:  # type: ignore[no-untyped-def]
    assert NFD != WORDS
    data = client.post("/v1/embeddings", json={"input": [WORDS, NFD]}).json()["data"]
    composed, decomposed = (np.array(d["embedding"]) for d in data)
    assert np.allclose(composed, decomposed, atol=1e-6)


def test_nfd_scores_and_matches_as_nfc(client) -> None:  # type: ignore[no-untyped-def]
    answer = client.post("/v1/similarity", json={"inputs": {"source_sentence": NFD, "sentences": [WORDS]}})
    assert answer.status_code == 200, answer.text
    assert answer.json()[0] == pytest.approx(1.0, abs=1e-5)
    for mode in ("lexical", "hybrid"):
        answer = client.post("/v1/collections/main/search", json={"query": NFD, "mode": mode})
        assert answer.status_code == 200, answer.text
        hits = answer.json()["data"]
        assert hits[0]["id"] == "cat", mode


def test_an_instruction_of_nuls_alone_is_empty(client) -> None:  # type: ignore[no-untyped-def]
    answer = client.post("/v1/embeddings", json={"input": WORDS, "instruction": "\x00\x00\x00"})
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "instruction"
