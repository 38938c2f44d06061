"""The MCP tools with the official `mcp` client: over streamable HTTP at /mcp on the server (behind
the scoped keys) and over stdio (`munjang mcp`). A Korean query finds its Korean passage; a read-only
key's add and a collection-limited key's other collection are refused; hostile inputs are error
results, never a crash, and the server keeps answering."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

import munjang
from munjang import Collection, load_encoder
from munjang.access import create_key, revoke_key
from munjang.server import ServerSettings, create_app
from tests.helpers.server import live_server

PASSAGES = {
    "seoul": "서울의 겨울은 춥고 건조하며 한강이 얼기도 한다.",
    "kimchi": "김치는 배추를 소금에 절인 뒤 고춧가루와 젓갈로 버무려 발효시킨 음식이다.",
    "ktx": "KTX는 서울과 부산을 두 시간 반 만에 잇는 고속철도이다.",
    "cat": "The cat sleeps on the warm windowsill all afternoon.",
}
TOOLS = {"list_collections", "search", "fetch_document", "add_documents", "embed"}


@pytest.fixture(scope="module")
def e5(e5_path: Path):  # type: ignore[no-untyped-def]
    return load_encoder(str(e5_path), device="cpu")


@pytest.fixture(scope="module")
def place(e5, e5_path, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    where = tmp_path_factory.mktemp("mcp")
    with Collection.create(where / "korean", str(e5_path), encoder=e5) as collection:
        collection.add(list(PASSAGES), list(PASSAGES.values()), [{"lang": "ko"}] * 3 + [{"lang": "en"}])
    with Collection.create(where / "private", str(e5_path), encoder=e5) as collection:
        collection.add(["secret"], ["임원 회의록: 3분기 예산 삭감"])
    return where


@pytest.fixture(scope="module")
def keys(place: Path) -> dict[str, str]:
    path = place / "keys.json"
    return {
        "reader": create_key(path, "reader", ["read"]),
        "writer": create_key(path, "writer", ["read", "write"], ["korean"]),
        "full": create_key(path, "full", ["read", "write"]),
    }


@pytest.fixture(scope="module")
def url(e5, place, keys):  # type: ignore[no-untyped-def]
    settings = ServerSettings(
        models={"e5": e5},
        collections_dir=place,
        keys_file=place / "keys.json",
        mcp=True,
        max_chars_per_input=5000,
    )
    with live_server(create_app(settings)) as base:
        yield f"{base}/mcp"


@asynccontextmanager
async def http_session(url: str, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


def call(url: str, key: str, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """(is_error, structured content or the error text) of one tool call over HTTP."""

    async def run() -> tuple[bool, Any]:
        async with http_session(url, key) as session:
            result = await session.call_tool(tool, arguments)
            if result.is_error:  # the SDK puts "Error executing tool NAME: " before the tool's message
                return True, result.content[0].text.removeprefix(f"Error executing tool {tool}: ")  # type: ignore[union-attr]
            return False, result.structured_content

    return anyio.run(run)


def test_http_lists_the_tools_with_plain_descriptions(url, keys) -> None:  # type: ignore[no-untyped-def]
    async def run() -> Any:
        async with http_session(url, keys["reader"]) as session:
            return (await session.list_tools()).tools

    tools = anyio.run(run)
    assert {t.name for t in tools} == TOOLS
    assert all(len(t.description or "") > 40 for t in tools)


def test_http_korean_query_finds_the_korean_passage(url, keys) -> None:  # type: ignore[no-untyped-def]
    failed, found = call(
        url, keys["reader"], "search", {"collection": "korean", "query": "배추로 만든 발효 음식", "k": 2}
    )
    assert not failed, found
    top = found["hits"][0]
    assert top["id"] == "kimchi" and "김치" in top["text"] and top["scores"]
    assert "location" in top
    failed, doc = call(url, keys["reader"], "fetch_document", {"collection": "korean", "id": "ktx"})
    assert not failed and doc["text"] == PASSAGES["ktx"]
    failed, listed = call(url, keys["reader"], "list_collections", {})
    assert {c["name"] for c in listed["collections"]} == {"korean", "private"}


def test_http_read_only_key_cannot_add(url, keys) -> None:  # type: ignore[no-untyped-def]
    docs = [{"id": "new", "text": "새 문서"}]
    failed, message = call(url, keys["reader"], "add_documents", {"collection": "korean", "documents": docs})
    assert failed and message.startswith("403") and "'write'" in message


def test_http_collection_limited_key_is_refused_elsewhere(url, keys, caplog) -> None:  # type: ignore[no-untyped-def]
    failed, message = call(url, keys["writer"], "search", {"collection": "private", "query": "예산"})
    assert failed and message.startswith("403") and "'private'" in message
    failed, listed = call(url, keys["writer"], "list_collections", {})
    assert not failed and [c["name"] for c in listed["collections"]] == ["korean"]
    docs = [{"id": "busan", "text": "부산은 바다와 돼지국밥으로 유명한 항구 도시이다."}]
    with caplog.at_level("INFO", logger="munjang.audit"):
        failed, counts = call(
            url, keys["writer"], "add_documents", {"collection": "korean", "documents": docs}
        )
    assert not failed and counts["added"] == 1
    assert any(getattr(r, "key", None) == "writer" for r in caplog.records if r.name == "munjang.audit")
    failed, found = call(
        url, keys["writer"], "search", {"collection": "korean", "query": "돼지국밥 항구", "k": 1}
    )
    assert found["hits"][0]["id"] == "busan"


def raw_status(url: str, key: str | None) -> int:
    """The HTTP status of one tools/list posted with `key`."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    return httpx2.post(url, json=body, headers={**headers, **accept}).status_code


def test_http_without_a_known_key_is_401_and_a_revoke_is_at_once(url, place) -> None:  # type: ignore[no-untyped-def]
    assert raw_status(url, None) == 401 and raw_status(url, "mj_unknown") == 401
    secret = create_key(place / "keys.json", "short-lived", ["read"])
    failed, _ = call(url, secret, "list_collections", {})
    assert not failed
    revoke_key(place / "keys.json", "short-lived")
    assert raw_status(url, secret) == 401


HOSTILE = [
    ("search", {"collection": "korean", "query": "가" * 100_000}, "400"),
    ("search", {"collection": "korean", "query": "김치", "filter": {"$where": "1"}}, "400"),
    ("search", {"collection": "korean", "query": "김치", "filter": {"year": {"$gt": 10**30}}}, "400"),
    (
        "search",
        {"collection": "korean", "query": "김치", "filter": {"a": {"$in": list(range(100_000))}}},
        "400",
    ),
    ("search", {"collection": "korean", "query": "김치", "k": 10**9}, "422"),
    ("search", {"collection": "korean", "query": "김치", "mode": "bogus"}, "1 validation error"),
    ("search", {"collection": "nowhere", "query": "김치"}, "404"),
    ("search", {"collection": "korean", "query": "   "}, "400"),
    ("search", {"collection": "korean"}, "1 validation error"),
    ("fetch_document", {"collection": "korean", "id": "\x00"}, "404"),
    ("add_documents", {"collection": "korean", "documents": [{"id": "n", "text": "a\x00b" * 3000}]}, "400"),
    ("add_documents", {"collection": "korean", "documents": []}, "400"),
    ("add_documents", {"collection": "korean", "documents": [{"id": 1, "text": "x"}]}, "422"),
    ("embed", {"texts": ["x"] * 5000}, "400"),
    ("embed", {"texts": ["ok"], "model": "nope"}, "404"),
]


def test_http_hostile_inputs_are_error_results(url, keys) -> None:  # type: ignore[no-untyped-def]
    """Each bad call is an error result saying what was wrong (the status the HTTP route would
    give), and the same session still searches after each."""

    async def run() -> list[tuple[str, str, bool]]:
        seen = []
        async with http_session(url, keys["full"]) as session:
            for tool, arguments, expected in HOSTILE:
                result = await session.call_tool(tool, arguments)
                text = result.content[0].text.removeprefix(f"Error executing tool {tool}: ")  # type: ignore[union-attr]
                seen.append((expected, text, bool(result.is_error)))
                after = await session.call_tool("search", {"collection": "korean", "query": "김치", "k": 1})
                assert not after.is_error and after.structured_content["hits"]
        return seen

    for expected, text, failed in anyio.run(run):
        assert failed and text.startswith(expected), (expected, text)


def test_http_embed_matches_the_model(url, keys, e5) -> None:  # type: ignore[no-untyped-def]
    failed, answer = call(url, keys["reader"], "embed", {"texts": ["안녕하세요"]})
    assert not failed and answer["model"] == "e5"
    expected = e5.encode(["안녕하세요"])[0]
    assert max(abs(a - float(b)) for a, b in zip(answer["embeddings"][0], expected, strict=True)) < 1e-4


@pytest.mark.slow
def test_stdio_lists_tools_and_answers_a_korean_query(place, e5_path) -> None:  # type: ignore[no-untyped-def]
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "munjang.cli",
            "mcp",
            "--collections-dir",
            str(place),
            "-m",
            f"e5={e5_path}",
            "--read-only",
        ],
        # this munjang (the client passes only a few variables on by default)
        env={**os.environ, "PYTHONPATH": str(Path(munjang.__file__).parents[1])},
    )

    async def run() -> tuple[set[str], Any, Any]:
        async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            found = await session.call_tool("search", {"collection": "korean", "query": "서울 부산 고속철도"})
            refused = await session.call_tool(
                "add_documents", {"collection": "korean", "documents": [{"id": "x", "text": "y"}]}
            )
            return tools, found, refused

    tools, found, refused = anyio.run(run)
    assert tools == TOOLS
    assert not found.is_error and found.structured_content["hits"][0]["id"] == "ktx"
    assert refused.is_error and "403" in refused.content[0].text  # type: ignore[union-attr]
    assert json.loads(found.content[0].text)["hits"]  # type: ignore[union-attr]
