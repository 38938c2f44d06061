"""Bounded work: a full queue answers 503 + Retry-After at once, a request past its deadline or whose
client left is dropped before its rows are encoded, and every response and collection count is capped."""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import CancelledError
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from munjang import Collection
from munjang.server import ServerSettings, create_app
from munjang.server import app as app_module
from munjang.server.batcher import WARM_UP_ROWS, DynamicBatcher, QueueFullError
from tests.helpers.server import LOCAL, live_server


class Gate:
    """A compute function that blocks until released and records the rows it was given."""

    def __init__(self, encoder: Any) -> None:
        self.encoder, self.open, self.seen = encoder, threading.Event(), []

    def __call__(self, encoded: dict[str, list[list[int]]], **options: Any) -> np.ndarray:
        self.open.wait(30)
        self.seen.append([tuple(ids) for ids in encoded["input_ids"]])
        return self.encoder.encode_tokenized(encoded, **options)


def test_queue_bounds_by_requests_and_tokens(encoder) -> None:
    gate = Gate(encoder)
    batcher = DynamicBatcher(encoder, max_wait_ms=0, compute=gate, max_queued_requests=2)
    first, second = batcher.submit(["하나"]), batcher.submit(["둘"])
    with pytest.raises(QueueFullError, match="2 requests are queued"):
        batcher.submit(["셋"])
    gate.open.set()
    assert first.result(10).shape == second.result(10).shape == (1, 384)
    batcher.submit(["넷"]).result(10)  # room again once the queue drained
    batcher.close()
    held = Gate(encoder)
    tokens = DynamicBatcher(encoder, max_wait_ms=0, compute=held, max_queued_tokens=20)
    alone = tokens.submit(["a b c d e f g h i j k l m n o p q r s t u v w x"])  # 26 tokens: alone, taken
    with pytest.raises(QueueFullError, match="tokens are queued"):
        tokens.submit(["m n o"])
    held.open.set()
    alone.result(10)
    tokens.close()


def test_cancelled_jobs_are_never_encoded(encoder) -> None:
    gate = Gate(encoder)
    batcher = DynamicBatcher(encoder, max_wait_ms=0, compute=gate)
    blocker = batcher.submit(["먼저 온 요청"])
    time.sleep(0.2)  # the worker holds the blocker's batch at the gate
    dropped, kept = batcher.submit(["떠난 손님"]), batcher.submit(["남은 손님"])
    assert dropped.cancel()
    gate.open.set()
    blocker.result(10), kept.result(10)
    dropped_ids = tuple(encoder.token_ids(["떠난 손님"])[0]["input_ids"][0])
    assert all(dropped_ids not in batch for batch in gate.seen)
    assert batcher.stats.cancelled == 1 and batcher.queued_tokens == 0
    batcher.close()


@pytest.fixture(params=[1.0])
def gated(encoder, request):
    """A live server whose model waits at a gate, with a queue of one request and a deadline of
    `request.param` seconds."""
    settings = ServerSettings(
        models={"mini": encoder}, max_queued_requests=1, request_timeout_s=request.param
    )
    app = create_app(settings)
    gate = Gate(encoder)
    app.state.batchers["mini"].close()
    app.state.batchers["mini"] = DynamicBatcher(encoder, max_wait_ms=0, compute=gate, max_queued_requests=2)
    with live_server(app) as url:
        yield url, gate, app
    gate.open.set()


@pytest.mark.parametrize("gated", [30.0], indirect=True)
def test_full_queue_is_503_with_retry_after_and_counted(gated) -> None:
    url, gate, _ = gated
    results: list[httpx.Response] = []
    first = threading.Thread(
        target=lambda: results.append(httpx.post(f"{url}/v1/embeddings", json={"input": "a"}, timeout=30))
    )
    first.start()
    time.sleep(0.3)
    second = threading.Thread(
        target=lambda: httpx.post(f"{url}/v1/embeddings", json={"input": "c"}, timeout=30)
    )
    second.start()
    time.sleep(0.3)
    busy = httpx.post(f"{url}/v1/embeddings", json={"input": "b"}, timeout=30)
    assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
    assert busy.json()["error"]["code"] == "queue_full"
    assert 'munjang_rejected_total{reason="queue_full"} 1.0' in httpx.get(f"{url}/metrics").text
    gate.open.set()
    first.join(10), second.join(10)
    assert [r.status_code for r in results] == [200]


def drained(batcher: DynamicBatcher) -> None:
    """Wait for the event, not a time: the batcher has computed the held batch and emptied its queue
    (a busy machine takes longer to get there)."""
    give_up = time.monotonic() + 60
    while (batcher.stats.batches < 1 or batcher.queue_depth) and time.monotonic() < give_up:
        time.sleep(0.02)


def post_in_thread(url: str, text: str) -> threading.Thread:
    thread = threading.Thread(
        target=lambda: httpx.post(f"{url}/v1/embeddings", json={"input": text}, timeout=30)
    )
    thread.start()
    time.sleep(0.3)
    return thread


def test_a_request_past_its_deadline_is_dropped(gated) -> None:
    url, gate, app = gated
    batcher = app.state.batchers["mini"]
    blocker = post_in_thread(url, "x")  # its batch waits at the gate
    started = time.monotonic()
    late = httpx.post(f"{url}/v1/embeddings", json={"input": "deadline"}, timeout=30)
    assert late.status_code == 503 and late.json()["error"]["code"] == "deadline_exceeded"
    assert late.headers["retry-after"] == "1" and 0.6 <= time.monotonic() - started < 3
    gate.open.set()
    blocker.join(10)
    drained(batcher)
    assert batcher.stats.cancelled == 1 and batcher.queue_depth == 0
    late_ids = tuple(batcher.encoder.token_ids(["deadline"])[0]["input_ids"][0])
    assert all(late_ids not in batch for batch in gate.seen), "the expired request was encoded"


@pytest.mark.parametrize("gated", [30.0], indirect=True)
def test_a_departed_clients_work_is_dropped(gated) -> None:
    url, gate, app = gated
    batcher = app.state.batchers["mini"]
    blocker = threading.Thread(
        target=lambda: httpx.post(f"{url}/v1/embeddings", json={"input": "x"}, timeout=30)
    )
    blocker.start()
    time.sleep(0.3)  # its batch now waits at the gate
    with pytest.raises(httpx.TimeoutException):
        httpx.post(f"{url}/v1/embeddings", json={"input": "gone"}, timeout=0.3)
    time.sleep(0.5)
    gate.open.set()  # well before the 30 s deadline: only the disconnect can have dropped it
    blocker.join(10)
    drained(batcher)
    assert batcher.stats.cancelled == 1 and batcher.queue_depth == 0
    gone = tuple(batcher.encoder.token_ids(["gone"])[0]["input_ids"][0])
    assert all(gone not in batch for batch in gate.seen), "the departed client's text was encoded"


def test_tokenize_response_is_capped(encoder) -> None:
    app = create_app(ServerSettings(models={"mini": encoder}, max_tokenize_tokens=50))
    with TestClient(app, base_url=LOCAL) as client:
        ok = client.post("/v1/tokenize", json={"inputs": "a short text"})
        assert ok.status_code == 200 and ok.json()[0][0]["special"]
        big = client.post("/v1/tokenize", json={"inputs": ["word " * 40, "word " * 40]})
        assert big.status_code == 413 and big.json()["error"]["param"] == "inputs"


def test_collections_are_capped(encoder, tmp_path) -> None:
    app = create_app(ServerSettings(models={"mini": encoder}, collections_dir=tmp_path, max_collections=1))
    with TestClient(app, base_url=LOCAL) as client:
        assert client.post("/v1/collections", json={"name": "one"}).status_code == 201
        second = client.post("/v1/collections", json={"name": "two"})
        assert second.status_code == 400 and second.json()["error"]["code"] == "too_many_collections"
    assert not (tmp_path / "two").exists()


def test_a_stalled_body_is_408(encoder, monkeypatch) -> None:
    monkeypatch.setattr(app_module, "BODY_TIMEOUT_S", 0.5)
    with live_server(create_app(ServerSettings(models={"mini": encoder}))) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            raw.sendall(
                b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b'Content-Length: 100\r\n\r\n{"input"'
            )
            answer = raw.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408")


def test_a_search_does_not_wait_for_a_long_add(encoder, tmp_path) -> None:
    with Collection.create(tmp_path / "main", encoder=encoder) as collection:
        collection.add(["0"], ["처음 문서"])
    app = create_app(
        ServerSettings(models={"mini": encoder}, collections_dir=tmp_path, max_inputs_per_request=5000)
    )
    docs = [{"id": f"d{i}", "text": f"문서 {i}: 오늘의 날씨와 주식 시장 소식 {i % 97}"} for i in range(2000)]
    with live_server(app) as url:
        search = {"query": "날씨", "top_k": 3}
        httpx.post(f"{url}/v1/collections/main/search", json=search, timeout=30)  # warm
        idle = time.perf_counter()
        httpx.post(f"{url}/v1/collections/main/search", json=search, timeout=30)
        idle = time.perf_counter() - idle
        done: dict[str, float] = {}

        def add() -> None:
            started = time.perf_counter()
            answer = httpx.post(f"{url}/v1/collections/main/documents", json={"documents": docs}, timeout=300)
            assert answer.status_code == 200
            done["add"] = time.perf_counter() - started

        writer = threading.Thread(target=add)
        writer.start()
        time.sleep(0.5)
        latencies = []
        while writer.is_alive() and len(latencies) < 5:
            started = time.perf_counter()
            answer = httpx.post(f"{url}/v1/collections/main/search", json=search, timeout=300)
            assert answer.status_code == 200
            latencies.append(time.perf_counter() - started)
            assert httpx.get(f"{url}/v1/collections", timeout=300).status_code == 200
        writer.join(300)
    assert latencies, "the add ended before a search could run beside it"
    assert done["add"] > 3 * max(latencies), (done, latencies, idle)
    assert max(latencies) < max(2.0, 10 * idle), (latencies, idle)


def test_connections_that_never_finish_their_headers_are_closed(encoder, monkeypatch) -> None:
    from munjang.server import protocol

    monkeypatch.setattr(protocol, "HEADER_TIMEOUT_S", 0.5)
    app = create_app(ServerSettings(models={"mini": encoder}))
    with live_server(app, http=protocol.HeaderDeadlineProtocol) as url:
        port = int(url.rsplit(":", 1)[1])
        silent = socket.create_connection(("127.0.0.1", port), timeout=5)
        trickle = socket.create_connection(("127.0.0.1", port), timeout=5)
        trickle.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        with httpx.Client(base_url=url) as client:  # one keep-alive connection, several requests
            for _ in range(3):
                assert client.get("/health").status_code == 200
                time.sleep(0.3)
        time.sleep(0.6)
        assert silent.recv(10) == b"" and trickle.recv(10) == b"", "the server kept them open"
        silent.close(), trickle.close()


class Slow:
    """A model that takes `seconds` a batch and `per_token` seconds a token (so its speed is known to
    within the machine's own overhead), waiting first at a gate that is open unless closed, and
    records the rows it computed."""

    def __init__(self, seconds: float, per_token: float = 0.0) -> None:
        self.seconds, self.per_token = seconds, per_token
        self.open, self.entered, self.seen = threading.Event(), threading.Event(), []
        self.open.set()

    def __call__(self, encoded: dict[str, list[list[int]]], **options: Any) -> np.ndarray:
        self.entered.set()
        self.open.wait(30)
        time.sleep(self.seconds + self.per_token * sum(map(len, encoded["input_ids"])))
        self.seen.append([tuple(ids) for ids in encoded["input_ids"]])
        return np.zeros((len(encoded["input_ids"]), 384), np.float32)


def test_a_request_expected_to_wait_past_its_limit_is_refused_at_arrival(encoder) -> None:
    """Admission by expected wait (the subject is the batcher: a fake slow model): requests are taken
    while the measured speed says they will be done within `max_queue_wait_s`, the next is refused
    at once with the seconds the queue needs to drain, and every admitted one is answered."""
    model = Slow(0.2)
    batcher = DynamicBatcher(encoder, max_wait_ms=0, compute=model, max_queue_wait_s=2.0)
    batcher.submit(["속도를 한 번 재는 요청"]).result(30)
    cost = batcher.cost
    assert cost.tokens_per_s is not None and cost.tokens_per_s > 0
    model.open.clear()
    text = "차례를 기다리는 긴 요청 " * 8
    tokens = len(encoder.token_ids([text])[0]["input_ids"][0])
    admitted = []
    with pytest.raises(QueueFullError, match="would wait about") as refused:
        while len(admitted) < 1000:
            admitted.append(batcher.submit([text]))
    queued = batcher.queued_tokens
    assert admitted and cost.seconds_for(queued + tokens) > 2.0 >= cost.seconds_for(queued)
    assert refused.value.retry_after == pytest.approx(max(1.0, cost.seconds_for(queued)))
    with pytest.raises(QueueFullError, match="would wait about"):  # a deadline closer than the limit
        batcher.submit_tokenized(encoder.token_ids(["짧은 요청"])[0], deadline=time.monotonic() + 0.001)
    assert batcher.stats.refused_wait == 2 and batcher.stats.refused_full == 0
    model.open.set()
    assert all(f.result(60).shape == (1, 384) for f in admitted)
    batcher.close()


def test_a_request_whose_deadline_passes_while_queued_is_never_computed(encoder) -> None:
    model = Slow(0.0)
    batcher = DynamicBatcher(encoder, max_wait_ms=0, compute=model)
    model.open.clear()
    blocker = batcher.submit(["먼저 온 요청"])
    assert model.entered.wait(30)  # its batch waits at the gate
    deadline = time.monotonic() + 0.2
    late = batcher.submit_tokenized(encoder.token_ids(["늦은 요청"])[0], deadline=deadline)
    while time.monotonic() <= deadline:  # the deadline passes while it is queued
        time.sleep(0.05)
    model.open.set()
    assert blocker.result(30).shape == (1, 384)
    with pytest.raises(CancelledError):
        late.result(30)
    late_ids = tuple(encoder.token_ids(["늦은 요청"])[0]["input_ids"][0])
    assert all(late_ids not in batch for batch in model.seen)
    assert batcher.stats.expired == 1 and batcher.queued_tokens == 0
    batcher.close()


def test_an_embeddings_request_expected_to_wait_too_long_is_503_at_once(encoder, monkeypatch) -> None:
    model = Slow(0.0, per_token=0.002)  # 500 tokens/s: the app's warm-up batch measures it
    monkeypatch.setattr(encoder, "encode_tokenized", model)  # what the app's batcher computes with
    app = create_app(ServerSettings(models={"mini": encoder}, max_queue_wait_s=1.0))
    batcher = app.state.batchers["mini"]
    with live_server(app) as url:
        assert httpx.post(f"{url}/v1/embeddings", json={"input": "재는 요청"}, timeout=30).status_code == 200
        model.open.clear()
        model.entered.clear()
        blocker = post_in_thread(url, "x")
        assert model.entered.wait(30)  # the blocker's batch waits at the gate
        long = httpx.post(f"{url}/v1/embeddings", json={"input": ["아주 긴 요청 " * 100] * 8}, timeout=30)
        assert long.status_code == 503 and long.json()["error"]["code"] == "queue_full"
        assert "would wait about" in long.json()["error"]["message"] and int(long.headers["retry-after"]) >= 1
        metrics = httpx.get(f"{url}/metrics").text
        assert 'munjang_batcher_requests{model="mini",outcome="refused_wait"} 1.0' in metrics
        speed = next(
            line for line in metrics.splitlines() if line.startswith("munjang_batcher_tokens_per_second{")
        )
        assert float(speed.split()[-1]) == pytest.approx(batcher.cost.tokens_per_s)
        model.open.set()
        blocker.join(30)


def test_a_warmed_up_batcher_knows_its_speed_before_the_first_request(encoder) -> None:
    """A burst on a cold server was admitted by the hard bounds alone until its first batch came
    back (54 of 200 clients timed out on one core): warm-up batches of two sizes measure both parts
    of a batch's cost first, the fixed one and the one per token."""
    model = Slow(0.2, per_token=0.001)
    batcher = DynamicBatcher(encoder, max_wait_ms=0, compute=model, warm_up=True)
    give_up = time.monotonic() + 60
    while batcher.cost.measured < len(WARM_UP_ROWS) and time.monotonic() < give_up:
        time.sleep(0.01)
    cost = batcher.cost
    assert cost.per_token is not None and 0.0009 < cost.per_token < 0.002  # less the machine's overhead
    assert 0.15 < cost.fixed < 0.5
    assert cost.tokens_per_s is not None and cost.tokens_per_s < 1000
    assert batcher.stats.batches == 0 and batcher.stats.requests == 0  # not counted as work done
    batcher.close()
