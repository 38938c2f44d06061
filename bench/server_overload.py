"""Overload: what `munjang serve` does with more work than it can take, and reads beside a long write.

1. Burst: `--rounds` times, 4x the queue bound (`--queue` requests, `munjang serve
   --max-queued-requests`) of concurrent POST /v1/embeddings at once, each 8 sentences of ~40 words
   (the hardening issue's load), clients giving up after the server's deadline + 5 s. Reported per
   round: answers by status (every request must get 200 or 503; none may fail or time out), the
   slowest answer against the deadline, p50/p99 latency of the accepted ones, and the server's
   resident memory (its process and the model processes) after each round: flat means nothing piles up;
   the model processes' growth over the last 10 bursts is reported on its own.
2. Abandoned work: 6 concurrent /v1/similarity requests of 256 sentences of 1,200 characters whose
   clients leave after 5 s, then the server's CPU seconds in each second after: idle means dropped.
3. Search during an add: idle search latency (median of 10), then `--docs` documents added through
   POST /v1/collections/bench/documents (2,000 per request, one after another) while a search runs
   every 0.25 s. First the same documents go, request by request, into another collection with no
   search running (the add's own time alone: a write gives up a core only while searches come),
   and after each request the same search is timed there idle: the idle latency at each size the
   collection passes through. Reported: the latencies during the add and their ratio to the median
   idle latency over those sizes.
4. Hostile mix (`--hostile SECONDS`, the hardening issue's): for that long, one client each sends
   again and again a rerank of a 100,000-character query and documents, a hybrid search whose query is
   100,000 characters of Hangul with no space, a document of 100,000 characters, and office and HWP
   uploads built to cost the most within the readers' limits (or just past them); meanwhile a prober
   asks /health and embeds one sentence every half second. Reported: the answers of each kind (4xx and
   503 are fine, never a 500 or a dropped connection), the prober's latencies, and the server's peak
   resident memory (all its processes, sampled every 0.2 s) against `--max-rss-mib`.

    python bench/server_overload.py              # writes bench/results/server_overload.json
    python bench/server_overload.py --defaults --clients 200 --client-timeout 15 --rounds 3 \
        --name server_overload-admission           # the admission issue's burst, default server
    python bench/server_overload.py --defaults --rounds 0 --hostile 60 --name server_overload-hostile
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from munjang.server.collections_api import ServedCollection

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.helpers: the hostile files

from common import load_corpus, print_environment, process_tree, rss_bytes, running_server, write_result


def forty_words(corpus: list[str], i: int) -> str:
    words: list[str] = []
    j = i
    while len(words) < 40:
        words += corpus[j % len(corpus)].split()
        j += 1
    return " ".join(words[:40])


async def burst(
    url: str, requests: int, corpus: list[str], timeout: float, model: str | None = "all-MiniLM-L6-v2"
) -> list[tuple[str, float]]:
    """(status or error name, seconds) for `requests` concurrent embeddings requests (to `model`, or
    the server's default model)."""
    async with httpx.AsyncClient(
        base_url=url, timeout=timeout, limits=httpx.Limits(max_connections=None)
    ) as c:

        async def one(k: int) -> tuple[str, float]:
            body: dict[str, Any] = {"input": [forty_words(corpus, 8 * k + i) for i in range(8)]}
            if model is not None:
                body["model"] = model
            started = time.perf_counter()
            try:
                answer = await c.post("/v1/embeddings", json=body)
                return str(answer.status_code), time.perf_counter() - started
            except httpx.HTTPError as e:
                return type(e).__name__, time.perf_counter() - started

        return await asyncio.gather(*(one(k) for k in range(requests)))


def server_rss_mib(pid: int) -> float:
    return round(sum(rss_bytes(p) for p in process_tree(pid)) / 2**20, 1)


def worker_rss_mib(pid: int) -> list[float]:
    """Resident memory of each model process (the server's descendants), MiB."""
    return [round(rss_bytes(p) / 2**20, 1) for p in process_tree(pid)[1:]]


def growth_mib(series: list[list[float]], last: int) -> float:
    """How much the model processes' total RSS grew over the last `last` rounds."""
    totals = [sum(s) for s in series]
    return round(totals[-1] - totals[max(0, len(totals) - 1 - last)], 1)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def timed_searches(client: httpx.Client, name: str, search: dict[str, Any], n: int = 10) -> float:
    """Median seconds of `n` searches on an idle collection."""
    times = []
    for _ in range(n):
        started = time.perf_counter()
        client.post(f"/v1/collections/{name}/search", json=search).raise_for_status()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def search_during_add(url: str, docs: int) -> dict[str, Any]:
    search = {"query": "weather in Seoul today", "top_k": 5}
    corpus = load_corpus(docs, seed=1, lang="mixed")
    step = 2000

    def add_part(client: httpx.Client, name: str, i: int) -> float:
        """Seconds to add documents i .. i + step to collection `name` in one request."""
        part = [{"id": f"d{j}", "text": corpus[j]} for j in range(i, min(docs, i + step))]
        started = time.perf_counter()
        client.post(f"/v1/collections/{name}/documents", json={"documents": part}).raise_for_status()
        return time.perf_counter() - started

    with httpx.Client(base_url=url, timeout=3600) as client:
        # The add alone, with the idle search latency at each size it passes through (measured between
        # requests, then past the server's window of recent searches before the next request).
        for name in ("alone", "bench"):
            assert client.post("/v1/collections", json={"name": name}).status_code == 201
            seed = {"documents": [{"id": "seed", "text": "seed"}]}
            client.post(f"/v1/collections/{name}/documents", json=seed)
            client.post(f"/v1/collections/{name}/search", json=search)
        idle_empty = timed_searches(client, "bench", search)
        alone_seconds, idle_by_size = 0.0, {}
        for i in range(0, docs, step):
            time.sleep(ServedCollection.READ_WINDOW_S + 0.5)
            alone_seconds += add_part(client, "alone", i)
            idle_by_size[min(docs, i + step)] = timed_searches(client, "alone", search)
        time.sleep(ServedCollection.READ_WINDOW_S + 0.5)

    added: dict[str, float] = {}

    def add() -> None:
        with httpx.Client(base_url=url, timeout=3600) as writer:
            added["bench"] = sum(add_part(writer, "bench", i) for i in range(0, docs, step))

    with httpx.Client(base_url=url, timeout=600) as client:
        thread = threading.Thread(target=add)
        thread.start()
        during = []
        while thread.is_alive():
            started = time.perf_counter()
            client.post("/v1/collections/bench/search", json=search).raise_for_status()
            during.append(time.perf_counter() - started)
            time.sleep(0.25)
        thread.join()
    idle_s = statistics.median([idle_empty, *idle_by_size.values()])
    p50 = statistics.median(during)
    return {
        "documents": docs,
        "add_alone_seconds": round(alone_seconds, 1),
        "add_seconds": round(added["bench"], 1),
        "idle_search_ms_by_size": {"1": round(idle_empty * 1000, 1)}
        | {str(k): round(v * 1000, 1) for k, v in idle_by_size.items()},
        "idle_search_ms": round(idle_s * 1000, 1),
        "searches_during_add": len(during),
        "during_p50_ms": round(p50 * 1000, 1),
        "during_p90_ms": round(percentile(during, 0.9) * 1000, 1),
        "during_p99_ms": round(percentile(during, 0.99) * 1000, 1),
        "during_max_ms": round(max(during) * 1000, 1),
        "p50_ratio_to_idle": round(p50 / idle_s, 2),
        "p90_ratio_to_idle": round(percentile(during, 0.9) / idle_s, 2),
        "max_ratio_to_idle": round(max(during) / idle_s, 2),
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` and its descendants (Linux /proc)."""
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def abandoned_similarity(url: str, pid: int, clients: int = 6, timeout: float = 5.0) -> dict[str, Any]:
    """The hardening probe: `clients` concurrent /v1/similarity requests of 256 sentences of 1,200
    characters, each client leaving after `timeout` s; then the server's CPU use (all its processes)
    in each of the 4 seconds after they left: idle means the abandoned work was dropped."""
    sentence = "주식 시장이 오늘 큰 폭으로 하락했고 투자자들은 불안해했다. " * 34
    outcomes: list[str] = []
    before = cpu_seconds(pid)
    time.sleep(2.0)
    idle = round((cpu_seconds(pid) - before) / 2, 2)

    def client(c: int) -> None:
        body = {
            "inputs": {
                "source_sentence": "시장",
                "sentences": [f"{c}-{i} {sentence}"[:1200] for i in range(256)],
            }
        }
        try:
            outcomes.append(str(httpx.post(f"{url}/v1/similarity", json=body, timeout=timeout).status_code))
        except httpx.TimeoutException:
            outcomes.append("left")

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    busy = []
    for _ in range(4):
        before = cpu_seconds(pid)
        time.sleep(1.0)
        busy.append(round(cpu_seconds(pid) - before, 2))
    return {
        "outcomes": sorted(outcomes),
        "cpu_seconds_per_second_idle_before": idle,
        "cpu_seconds_in_each_second_after": busy,
    }


def hostile_uploads() -> list[tuple[str, bytes]]:
    """Office and HWP files that cost the most a reader allows, or just past a limit (tests/helpers)."""
    from tests.helpers import hostile_files as hostile

    return [
        ("styles.docx", hostile.docx_style_loop()),
        ("span.docx", hostile.docx_grid_span()),
        ("notes.docx", hostile.docx_footnotes(30_000)),
        ("grid.xlsx", hostile.xlsx_whole_grid()),
        ("far.xlsx", hostile.xlsx_far_row()),
        ("wide.xlsx", hostile.xlsx_wide_rows()),
        ("deck.pptx", hostile.pptx_slides(10_000)),
        ("zeros.hwp", hostile.hwp_zero_records(5_000_000)),
        ("long.hwp", hostile.hwp_long_paragraph(1_000_000)),
        ("version.docx", hostile.zip_version(hostile.docx_style_loop())),
    ]


def hostile_mix(url: str, pid: int, seconds: float, reranker: str, max_rss_mib: float) -> dict[str, Any]:
    """Section 4 of the module docstring."""
    long_text = "가" * 100_000
    mixed = ("서울 시청 앞 광장에서 열린 행사에 많은 시민이 모였다 " * 4000)[:100_000]
    uploads = hostile_uploads()
    with httpx.Client(base_url=url, timeout=120) as c:
        assert c.post("/v1/collections", json={"name": "hostile"}).status_code == 201
        seed = [{"id": f"s{i}", "text": t} for i, t in enumerate(load_corpus(50, seed=3, lang="ko"))]
        c.post("/v1/collections/hostile/documents", json={"documents": seed}).raise_for_status()
    stop = threading.Event()
    outcomes: dict[str, dict[str, int]] = {}
    probes: dict[str, list[float]] = {"health": [], "embeddings": []}
    probe_statuses: dict[str, dict[str, int]] = {"health": {}, "embeddings": {}}
    rss: list[float] = []

    def count(table: dict[str, int], key: str) -> None:
        table[key] = table.get(key, 0) + 1

    def attacker(kind: str, send: Any) -> None:
        table = outcomes.setdefault(kind, {})
        with httpx.Client(base_url=url, timeout=180) as c:
            k = 0
            while not stop.is_set():
                try:
                    count(table, str(send(c, k).status_code))
                except httpx.HTTPError as e:
                    count(table, type(e).__name__)
                k += 1

    def upload(c: httpx.Client, k: int) -> httpx.Response:
        name, raw = uploads[k % len(uploads)]
        body = {"name": name, "content": base64.b64encode(raw).decode(), "id": f"u{k}"}
        return c.post("/v1/collections/hostile/files", json=body)

    senders = {
        "rerank": lambda c, k: c.post(
            "/v1/rerank", json={"model": reranker, "query": mixed, "documents": [mixed, long_text, mixed]}
        ),
        "long_query": lambda c, k: c.post(
            "/v1/collections/hostile/search", json={"query": long_text, "top_k": 5, "mode": "hybrid"}
        ),
        "long_document": lambda c, k: c.post(
            "/v1/collections/hostile/documents", json={"documents": [{"id": f"l{k}", "text": mixed}]}
        ),
        "upload": upload,
    }

    def prober() -> None:
        with httpx.Client(base_url=url, timeout=60) as c:
            while not stop.is_set():
                for route, send in (
                    ("health", lambda: c.get("/health")),
                    ("embeddings", lambda: c.post("/v1/embeddings", json={"input": "오늘 서울의 날씨"})),
                ):
                    started = time.perf_counter()
                    try:
                        count(probe_statuses[route], str(send().status_code))
                    except httpx.HTTPError as e:
                        count(probe_statuses[route], type(e).__name__)
                    probes[route].append(time.perf_counter() - started)
                stop.wait(0.5)

    def sampler() -> None:
        while not stop.is_set():
            rss.append(server_rss_mib(pid))
            stop.wait(0.2)

    threads = [threading.Thread(target=attacker, args=item) for item in senders.items()]
    threads += [threading.Thread(target=prober), threading.Thread(target=sampler)]
    before = server_rss_mib(pid)
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join()
    bad = {k: v for k, v in outcomes.items() if set(v) - {"200", "201", "400", "413", "422", "503"}}
    return {
        "seconds": seconds,
        "outcomes": outcomes,
        "unexpected_outcomes": bad,
        "probe_statuses": probe_statuses,
        "probe_ms": {
            route: {
                "p50": round(percentile(t, 0.5) * 1000, 1),
                "p99": round(percentile(t, 0.99) * 1000, 1),
                "max": round(max(t) * 1000, 1),
            }
            for route, t in probes.items()
            if t
        },
        "server_rss_mib_before": before,
        "server_rss_mib_peak": max(rss),
        "max_rss_mib": max_rss_mib,
        "peak_under_bound": max(rss) <= max_rss_mib,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queue", type=int, default=32, help="munjang serve --max-queued-requests")
    parser.add_argument("--deadline", type=float, default=10.0, help="munjang serve --request-timeout")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--docs", type=int, default=10_000, help="0 skips the search-during-add part")
    parser.add_argument("--name", default="server_overload")
    parser.add_argument(
        "--defaults",
        action="store_true",
        help="the admission issue's replay: `munjang serve` with its default models and bounds, Korean "
        "sentences to the default model, --clients at once, each giving up after --client-timeout",
    )
    parser.add_argument("--clients", type=int, help="concurrent requests a burst (default: 4x --queue)")
    parser.add_argument("--client-timeout", type=float, help="seconds a client waits (default: deadline + 5)")
    parser.add_argument(
        "--max-queue-wait", type=float, help="munjang serve --max-queue-wait (default: the server's own)"
    )
    parser.add_argument("--hostile", type=float, default=0, help="seconds of the hostile mix (0: none)")
    parser.add_argument("--max-rss-mib", type=float, default=4096, help="the hostile mix's memory bound")
    args = parser.parse_args(argv)
    environment = print_environment()
    corpus = load_corpus(4000, seed=0, lang="ko" if args.defaults else "en")
    model: str | None = None if args.defaults else "all-MiniLM-L6-v2"
    if args.defaults:
        serve = []
        args.deadline, args.docs = 30.0, 0
    else:
        serve = ["--model", "all-MiniLM-L6-v2", "--max-queued-requests", str(args.queue)]
        serve += ["--request-timeout", str(args.deadline), "--max-queued-tokens", str(10**9)]
    if args.max_queue_wait is not None:
        serve += ["--max-queue-wait", str(args.max_queue_wait)]
    clients = args.clients or 4 * args.queue
    client_timeout = args.client_timeout or args.deadline + 5
    with tempfile.TemporaryDirectory() as folder:
        if args.hostile:  # a cross-encoder for /v1/rerank: e5-small with a new head (the speed is the point)
            import munjang

            munjang.load_cross_encoder("multilingual-e5-small", device="cpu").save(Path(folder) / "rr")
            serve += ["--reranker", f"rr={Path(folder) / 'rr'}"]
        payload = run_server(args, serve, folder, clients, client_timeout, corpus, model)
    print(f"wrote {write_result(args.name, payload, environment)}")


def run_server(
    args: argparse.Namespace,
    serve: list[str],
    folder: str,
    clients: int,
    client_timeout: float,
    corpus: list[str],
    model: str | None,
) -> dict[str, Any]:
    """Sections 1-4 against one `munjang serve`; the result's payload."""
    collections = Path(folder) / "collections"
    collections.mkdir()
    with running_server([*serve, "--collections-dir", str(collections)]) as (url, server):
        rounds = []
        memory = [server_rss_mib(server.pid)]
        workers = [worker_rss_mib(server.pid)]
        for r in range(args.rounds):
            started = time.perf_counter()
            answers = asyncio.run(burst(url, clients, corpus, client_timeout, model))
            wall = time.perf_counter() - started
            statuses: dict[str, int] = {}
            for status, _ in answers:
                statuses[status] = statuses.get(status, 0) + 1
            accepted = [s for status, s in answers if status == "200"]
            memory.append(server_rss_mib(server.pid))
            workers.append(worker_rss_mib(server.pid))
            rounds.append(
                {
                    "requests": len(answers),
                    "statuses": statuses,
                    "slowest_s": round(max(s for _, s in answers), 2),
                    "accepted_p50_s": round(percentile(accepted, 0.5), 2),
                    "accepted_p99_s": round(percentile(accepted, 0.99), 2),
                    "accepted_per_s": round(len(accepted) / wall, 2),  # throughput under saturation
                }
            )
            print(f"burst {r + 1}: {rounds[-1]}; server RSS {memory[-1]} MiB, model processes {workers[-1]}")
        abandoned = None if args.defaults else abandoned_similarity(url, server.pid)
        if abandoned is not None:
            print(f"6 abandoned similarity requests: {abandoned}")
        reads = search_during_add(url, args.docs) if args.docs else None
        if reads is not None:
            print(f"search during a {args.docs:,}-document add: {reads}")
        hostile = hostile_mix(url, server.pid, args.hostile, "rr", args.max_rss_mib) if args.hostile else None
        if hostile is not None:
            print(f"hostile mix: {hostile}")
    every_answered = all(set(r["statuses"]) <= {"200", "503"} for r in rounds)
    within = all(r["slowest_s"] <= min(args.deadline + 1, client_timeout) for r in rounds)
    payload = {
        "serve_arguments": serve,
        "clients": clients,
        "client_timeout_s": client_timeout,
        "queue_bound": None if args.defaults else args.queue,
        "deadline_s": args.deadline,
        "burst_rounds": rounds,
        "every_request_answered_200_or_503": every_answered,
        "no_answer_past_deadline": within,
        "server_rss_mib_before_and_after_each_round": memory,
        "model_process_rss_mib_before_and_after_each_round": workers,
        "model_process_growth_mib_last_10_rounds": growth_mib(workers, 10),
        "server_growth_mib_last_10_rounds": growth_mib([[m] for m in memory], 10),
        "abandoned_similarity": abandoned,
        "search_during_add": reads,
        "hostile_mix": hostile,
    }
    print(f"every request 200 or 503: {every_answered}; none past the deadline: {within}; RSS {memory}")
    grew = payload["model_process_growth_mib_last_10_rounds"], payload["server_growth_mib_last_10_rounds"]
    print(f"over the last 10 bursts: model processes grew {grew[0]} MiB, the whole server {grew[1]} MiB")
    return payload


if __name__ == "__main__":
    main()
