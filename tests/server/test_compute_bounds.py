"""Every route that computes is bounded as /v1/embeddings is: a queue bound (503 + Retry-After), the
request deadline, and its work dropped when the client leaves; /map is bounded in size."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from munjang import Collection, load_cross_encoder
from munjang.server import ServerSettings, create_app, text_api
from munjang.server.compute import Cancelled, CancelToken, ComputeGate
from munjang.server.errors import APIError
from tests.helpers.server import LOCAL, live_server
from tests.helpers.training import tiny_bert


def test_six_abandoned_similarity_requests_leave_the_server_idle(encoder) -> None:  # type: ignore[no-untyped-def]
    """The probe that kept both cores busy for ~55 s after its clients had gone."""
    sentence = "주식 시장이 오늘 큰 폭으로 하락했고 투자자들은 불안해했다. " * 34  # over 1,200 characters
    bodies = [
        {
            "inputs": {
                "source_sentence": "시장",
                "sentences": [f"{c}-{i} {sentence}"[:1200] for i in range(256)],
            }
        }
        for c in range(6)
    ]
    app = create_app(ServerSettings(models={"mini": encoder}, request_timeout_s=120))
    with live_server(app) as url:
        outcomes: list[str] = []

        def client(body: dict) -> None:  # type: ignore[type-arg]
            try:
                outcomes.append(str(httpx.post(f"{url}/v1/similarity", json=body, timeout=5).status_code))
            except httpx.TimeoutException:
                outcomes.append("left")

        clients = [threading.Thread(target=client, args=(body,)) for body in bodies]
        for c in clients:
            c.start()
        for c in clients:
            c.join(30)
        # each left after 5 s, or was refused at once because the queue was full: never a 200 or a 500
        assert set(outcomes) <= {"left", "503"} and "left" in outcomes, outcomes
        # The batch under way when the clients left may finish (longer on a slower CPU); the rest of
        # their work must not run: idle within seconds, where the probe's server stayed busy ~55 s.
        deadline = time.monotonic() + 12.0
        while True:
            cpu = time.process_time()
            time.sleep(1.0)
            busy = time.process_time() - cpu
            if busy < 0.3 or time.monotonic() > deadline:
                break
        assert busy < 0.3, f"the server still computed {busy:.2f} CPU-s a second, 12 s after its clients left"
        assert app.state.batchers["mini"].queue_depth == 0
        # and it still answers
        answer = httpx.post(
            f"{url}/v1/similarity", json={"inputs": {"source_sentence": "a", "sentences": ["b"]}}
        )
        assert answer.status_code == 200


def test_a_full_gate_is_503_with_retry_after() -> None:
    gate = ComputeGate(workers=1, max_queued=1, timeout_s=30)
    release = threading.Event()

    async def scenario() -> tuple[int, str]:
        running = asyncio.ensure_future(gate.run(lambda _: release.wait(10)))
        waiting = asyncio.ensure_future(gate.run(lambda _: True))
        await asyncio.sleep(0.2)
        try:
            await gate.run(lambda _: True)
        except APIError as e:
            refused = (e.status, (e.headers or {}).get("Retry-After", ""))
        release.set()
        assert await running and await waiting
        return refused

    assert asyncio.run(scenario()) == (503, "1")
    assert gate.in_flight == 0
    gate.close()


def test_the_deadline_cancels_a_job_and_it_stops_at_its_next_step() -> None:
    gate = ComputeGate(workers=1, max_queued=0, timeout_s=0.3)
    steps: list[int] = []

    def long_job(token: CancelToken) -> None:
        for i in range(100):
            token.check()
            steps.append(i)
            time.sleep(0.05)

    async def scenario() -> int:
        try:
            await gate.run(long_job)
        except APIError as e:
            return e.status
        return 200

    assert asyncio.run(scenario()) == 503
    time.sleep(0.3)
    stopped_at = len(steps)
    time.sleep(0.3)
    assert len(steps) == stopped_at < 20
    assert gate.in_flight == 0
    gate.close()


def test_a_cancelled_rerank_scores_no_further_step(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cross = load_cross_encoder(tiny_bert(tmp_path / "tiny", dropout=0.0), device="cpu")
    docs = [f"문서 {i}" for i in range(text_api.RERANK_STEP * 4)]
    whole = cross.rank("질문", docs, show_progress_bar=False)
    assert text_api.rerank_hits(cross, "질문", docs, None, CancelToken()) == [
        {"corpus_id": h["corpus_id"], "score": pytest.approx(h["score"], abs=1e-6)} for h in whole
    ]
    token = CancelToken()
    calls: list[int] = []
    real = cross.rank

    def rank_then_leave(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        token.cancel()  # the client leaves while the first step runs
        return real(*args, **kwargs)

    cross.rank = rank_then_leave  # type: ignore[method-assign]
    with pytest.raises(Cancelled):
        text_api.rerank_hits(cross, "질문", docs, None, token)
    assert calls == [1]


def test_map_is_bounded(encoder, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from munjang.server import collections_api

    with Collection.create(tmp_path / "main", encoder=encoder) as collection:
        collection.add([str(i) for i in range(20)], [f"문장 {i}번 고양이" for i in range(20)])
    monkeypatch.setattr(collections_api, "MAX_UMAP_POINTS", 10)
    app = create_app(ServerSettings(models={"mini": encoder}, collections_dir=tmp_path))
    with TestClient(app, base_url=LOCAL) as http:
        refused = http.post("/v1/collections/main/map", json={"method": "umap", "limit": 20})
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "limit"
        auto = http.post("/v1/collections/main/map", json={"limit": 20})
        assert auto.status_code == 200 and auto.json()["method"] == "pca" and len(auto.json()["points"]) == 20


@pytest.mark.slow  # a fresh process loads torch and the model: 5-15 s
def test_a_refused_umap_map_imports_nothing_on_the_event_loop(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`/map` with `method: "umap"` imported umap (seconds: numba) on the event loop before refusing
    it, and /health stalled 4.6 s. The refusal now imports nothing: checked in a fresh process,
    where umap is not imported yet."""
    import subprocess
    import sys

    from tests.helpers.processes import ROOT

    code = """
import sys
from fastapi.testclient import TestClient
from munjang import Collection, load_encoder
from munjang.applications.projection import umap_available
from munjang.server import ServerSettings, collections_api, create_app
from tests.helpers.server import LOCAL
encoder = load_encoder(device="cpu")
with Collection.create(sys.argv[1] + "/main", encoder=encoder, tokenizer="word") as collection:
    collection.add([str(i) for i in range(12)], [f"문장 {i}번" for i in range(12)])
collections_api.MAX_UMAP_POINTS = 10
app = create_app(ServerSettings(models={"mini": encoder}, collections_dir=sys.argv[1]))
with TestClient(app, base_url=LOCAL) as http:
    refused = http.post("/v1/collections/main/map", json={"method": "umap", "limit": 12})
print(umap_available(), refused.status_code, refused.json()["error"]["param"], "umap" in sys.modules)
"""
    import os

    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"}
    run = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["True", "400", "limit", "False"]


def test_the_compute_gate_refuses_a_job_expected_to_wait_past_its_limit() -> None:
    """Admission by expected wait behind the gate: by the measured time of a job, a request that
    would wait for a worker longer than `max_wait_s` is refused at once with a Retry-After, within
    the queue bound."""
    gate = ComputeGate(workers=1, max_queued=50, timeout_s=30, max_wait_s=1.0)
    release = threading.Event()

    def job(_: CancelToken) -> str:
        time.sleep(0.2)
        return "done"

    def held(_: CancelToken) -> str:
        release.wait(30)
        return "held"

    async def scenario() -> tuple[list[str], APIError]:
        assert await gate.run(job) == "done"  # one job measured
        one = gate.job_time.seconds_for(1)
        assert one is not None and one >= 0.2
        tasks = [asyncio.ensure_future(gate.run(held))]
        await asyncio.sleep(0)
        refused = None
        while refused is None and len(tasks) < 50:
            try:
                gate.admit()  # as the next request would be
                gate.release()
                tasks.append(asyncio.ensure_future(gate.run(job)))
                await asyncio.sleep(0)
            except APIError as e:
                refused = e
        assert refused is not None
        waiting = gate.in_flight - gate.workers
        assert waiting * one <= 1.0 < (waiting + 1) * one
        release.set()
        return list(await asyncio.gather(*tasks)), refused

    results, refused = asyncio.run(scenario())
    assert results[0] == "held" and set(results[1:]) <= {"done"}
    assert refused.status == 503 and "would wait about" in str(refused) and gate.refused_wait == 1
    assert int(refused.headers["Retry-After"]) >= 1
    gate.close()
