"""A query's BM25 analysis is bounded by `MAX_QUERY_CHARS`, whatever its length: a hybrid search
whose query was 100,000 characters of Hangul without a space held a core for ~11 s in Kiwi."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from munjang import Collection
from munjang.search.collection.search import MAX_QUERY_CHARS


def test_a_long_query_is_analysed_up_to_the_budget(tmp_path: Path, encoder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with Collection.create(tmp_path / "c", encoder=encoder, tokenizer="word") as col:
        col.add(["a", "b"], ["서울 날씨가 맑다", "부산 바다가 푸르다"])
        real = col.encoding.query_tokenizer
        seen: list[int] = []

        def recording() -> Any:
            tokenize = real()

            def call(text: str) -> list[str]:
                seen.append(len(text))
                return tokenize(text)

            return call

        monkeypatch.setattr(col.encoding, "query_tokenizer", recording)
        query = "서울 " + "가" * 100_000
        for mode in ("lexical", "hybrid"):
            hits = col.search(query, k=2, mode=mode)
            assert hits and hits[0].id == "a", mode  # the words before the cut still match
        col.matched_terms(query, hits)
        assert seen and max(seen) == MAX_QUERY_CHARS
