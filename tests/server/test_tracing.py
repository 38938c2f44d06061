"""Traces with the OpenTelemetry SDK's in-memory exporter: the span tree of one hybrid search (the
request, its queue wait, each retriever with its encode or tokenize, fusion, rerank) and of one
embeddings request (tokenize, queue wait, encode); and with tracing off, no SDK loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import munjang
from munjang import Collection, load_cross_encoder
from munjang._util import tracing
from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL
from tests.helpers.training import tiny_bert


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    found = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(found))
    tracing.enable(provider=provider)
    try:
        yield found
    finally:
        tracing.disable()


@pytest.fixture(scope="module")
def client(encoder, exporter, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    where = tmp_path_factory.mktemp("traced")
    with Collection.create(where / "docs", encoder=encoder) as collection:
        collection.add(["1", "2", "3"], ["고양이가 소파에서 잔다", "주식 시장이 급락했다", "The cat sleeps"])
    cross = load_cross_encoder(tiny_bert(tmp_path_factory.mktemp("tiny"), dropout=0.0), device="cpu")
    settings = ServerSettings(models={"mini": encoder}, rerankers={"tiny": cross}, collections_dir=where)
    with TestClient(create_app(settings), base_url=LOCAL) as http:
        yield http


def tree(spans: tuple[ReadableSpan, ...], root: ReadableSpan) -> dict[str, Any]:
    """{name: children's tree} under `root` (names of one level are distinct here)."""
    children = [s for s in spans if s.parent is not None and s.parent.span_id == root.context.span_id]
    return {s.name: tree(spans, s) for s in children}


def request_span(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    (found,) = [s for s in spans if s.name == name and s.parent is None]
    return found


def test_the_span_tree_of_one_hybrid_search(client, exporter) -> None:  # type: ignore[no-untyped-def]
    exporter.clear()
    body = {"query": "고양이", "mode": "hybrid", "top_k": 2, "rerank": True}
    assert client.post("/v1/collections/docs/search", json=body).status_code == 200
    spans = exporter.get_finished_spans()
    root = request_span(spans, "POST /v1/collections/docs/search")
    assert root.attributes is not None
    assert root.attributes["collection"] == "docs" and root.attributes["mode"] == "hybrid"
    assert root.attributes["k"] == 2 and root.attributes["hits"] == 2
    assert root.attributes["http.status_code"] == 200
    assert tree(spans, root) == {
        "queue_wait": {},
        "retrieve.dense": {"encode": {}},
        "retrieve.lexical": {"tokenize": {}},
        "fusion": {},
        "rerank": {},
    }
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    (dense,) = [s for s in spans if s.name == "retrieve.dense"]
    assert dense.attributes is not None and dense.attributes["queries"] == 1
    for span in spans:  # children lie within their request
        assert root.start_time <= span.start_time <= span.end_time <= root.end_time  # type: ignore[operator]


def test_the_span_tree_of_one_embeddings_request(client, exporter) -> None:  # type: ignore[no-untyped-def]
    exporter.clear()
    assert client.post("/v1/embeddings", json={"input": ["안녕하세요", "반갑습니다"]}).status_code == 200
    spans = exporter.get_finished_spans()
    root = request_span(spans, "POST /v1/embeddings")
    assert tree(spans, root) == {"tokenize": {}, "queue_wait": {}, "encode": {}}
    (encode,) = [s for s in spans if s.name == "encode"]
    (wait,) = [s for s in spans if s.name == "queue_wait"]
    assert (
        encode.attributes is not None and encode.attributes["rows"] == 2 and encode.attributes["tokens"] > 2
    )
    assert wait.end_time == encode.start_time


def test_off_imports_no_opentelemetry(encoder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A server with tracing off searches without loading the OpenTelemetry SDK or an exporter
    (FastAPI itself imports the API package when it is installed)."""
    script = f"""
import sys
from fastapi.testclient import TestClient
import munjang
from munjang import Collection
from munjang.server import ServerSettings, create_app
encoder = munjang.load_encoder(device="cpu")
with Collection.create({str(tmp_path / "docs")!r}, encoder=encoder) as c:
    c.add(["1"], ["고양이"])
app = create_app(ServerSettings(models={{"mini": encoder}}, collections_dir={str(tmp_path)!r}))
with TestClient(app, base_url="http://127.0.0.1") as http:
    assert http.post("/v1/collections/docs/search", json={{"query": "고양이"}}).status_code == 200
    assert http.post("/v1/embeddings", json={{"input": "고양이"}}).status_code == 200
print(sorted(m for m in sys.modules if m.startswith(("opentelemetry.sdk", "opentelemetry.exporter"))))
"""
    env = {"PYTHONPATH": str(Path(munjang.__file__).parents[1]), "MUNJANG_ENCODE_BACKEND": "torch:fp32"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env={**os.environ, **env}, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
