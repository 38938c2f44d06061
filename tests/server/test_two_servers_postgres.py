"""Two `munjang serve` processes on one PostgreSQL collection answer alike, and a write through one
is found by the other at its next search: neither holds per-passage state (dense, BM25 and filters
run in SQL), so servers scale out by pointing at one database."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from munjang.search.collection.collection import Collection
from tests.helpers.processes import serve_process
from tests.helpers.training import tiny_bert

DOCS = [
    {"id": "apple", "text": "사과는 빨갛고 달콤한 과일이다", "metadata": {"kind": "fruit"}},
    {"id": "pear", "text": "배는 시원하고 물이 많은 과일이다", "metadata": {"kind": "fruit"}},
    {"id": "stock", "text": "주식 시장이 오늘 크게 떨어졌다", "metadata": {"kind": "news"}},
    {"id": "cat", "text": "고양이가 소파 위에서 낮잠을 잔다", "metadata": {"kind": "pet"}},
]
ASKS: list[dict[str, Any]] = [
    {"query": "과일", "mode": "lexical"},
    {"query": "주식 시장", "mode": "dense"},
    {"query": "고양이 낮잠", "mode": "hybrid"},
    {"query": "과일", "mode": "hybrid", "filter": {"kind": "fruit"}},
]


def search(url: str, ask: dict[str, Any]) -> list[tuple[str, float]]:
    answer = httpx.post(f"{url}/v1/collections/shared/search", json={**ask, "top_k": 5}, timeout=60)
    assert answer.status_code == 200, answer.text
    return [(hit["id"], round(hit["score"], 5)) for hit in answer.json()["data"]]


@pytest.mark.slow  # two servers start (about 20 s quiet); the default suite has the two-process test
def test_two_servers_share_one_postgres_collection(postgres_url: str, tmp_path: Path) -> None:
    model = tiny_bert(tmp_path / "bert")
    Collection.create("shared", str(model), backend=postgres_url).close()
    args = ["-m", f"bert={model}", "--backend", "torch", "--collections-db", postgres_url]
    env = {"MUNJANG_CACHE": str(tmp_path / "cache")}
    with ExitStack() as stack:
        (_, one), (_, two) = (stack.enter_context(serve_process(args, env)) for _ in range(2))
        added = httpx.post(f"{one}/v1/collections/shared/documents", json={"documents": DOCS}, timeout=60)
        assert added.status_code == 200 and added.json()["added"] == len(DOCS), added.text
        for ask in ASKS:
            assert search(two, ask) == search(one, ask) != []
        assert search(two, {"query": "과일", "mode": "lexical"})[0][0] in {"apple", "pear"}

        late = {"id": "late", "text": "포도는 작고 보라색인 과일이다", "metadata": {"kind": "fruit"}}
        assert (
            httpx.post(f"{two}/v1/collections/shared/documents", json={"documents": [late]}).status_code
            == 200
        )
        assert "late" in {hit for hit, _ in search(one, {"query": "포도", "mode": "lexical"})}
        gone = httpx.post(f"{one}/v1/collections/shared/delete", json={"ids": ["apple"]})
        assert gone.status_code == 200 and gone.json()["deleted"] == 1
        for ask in ASKS:
            found = search(two, ask)
            assert found == search(one, ask) and "apple" not in {hit for hit, _ in found}
