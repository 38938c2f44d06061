"""Server load: many concurrent clients on loopback against `munjang serve`, compared with encoding the
same sentences in-process.

1. In-process baseline: the same model encodes the corpus in one process (sentences/s).
2. `munjang serve` starts in a subprocess on 127.0.0.1; `--clients` asyncio clients each send
   POST /v1/embeddings with `--batch` sentences, back to back, for `--seconds`.
3. Reported: requests, errors (any non-200 or exception), sentences/s and its ratio to the
   in-process figures, request latency p50/p99, the server's resident memory (its process and
   the model process together) sampled every 0.25 s, as the peak in each quarter of the run (a
   leak shows as growth), and the CPU seconds the HTTP side, the model and the load generator used.

Two in-process figures: the whole corpus in one `encode` call (length-sorted over all of it: the
best case), and the same requests encoded one at a time in-process (8 sentences per call: what
a service without dynamic batching would do). Before the timed run, the server gets `--warmup`
seconds of the same load, uncounted.

    python bench/server_load.py                        # 64 clients, 30 s, batches of 8, base64
    python bench/server_load.py --encoding float --clients 16 --seconds 10

`--tracing` compares, in one run, servers with munjang[otel] absent (the OpenTelemetry SDK hidden
from the server; FastAPI needs the API package itself), present but tracing off (the default),
and on (`--otlp-endpoint` to a port where nothing listens: every span is made, exports fail off the
request path), in interleaved rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import cpu_seconds, load_corpus, print_environment, process_tree, rss_bytes, write_result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RawClient:
    """One keep-alive HTTP/1.1 connection over asyncio streams: a load generator as light as wrk's,
    so that on a small machine the clients take as little CPU from the server as they can (httpx
    took ~3x more)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, payload: dict[str, Any]) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        body = json.dumps(payload).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        await self.writer.drain()
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("the server closed the connection")
        status = int(status_line.split()[1])
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return status, await self.reader.readexactly(length)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def load(
    url: str, corpus: list[str], args: argparse.Namespace, pid: int, seconds: float
) -> dict[str, Any]:
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    errors: list[str] = []
    sentences = 0
    rss: list[tuple[float, int]] = []
    start = time.perf_counter()
    stop = start + seconds

    async def client(k: int) -> None:
        nonlocal sentences
        rng = random.Random(k)
        connection = RawClient(host, int(port))
        try:
            while time.perf_counter() < stop:
                batch = rng.sample(corpus, args.batch)
                t0 = time.perf_counter()
                try:
                    status, body = await connection.post(
                        "/v1/embeddings", {"input": batch, "encoding_format": args.encoding}
                    )
                except (OSError, ConnectionError, asyncio.IncompleteReadError, ValueError) as e:
                    errors.append(f"{type(e).__name__}: {e}")
                    await connection.close()
                    connection = RawClient(host, int(port))
                    continue
                if status != 200:
                    errors.append(f"{status}: {body[:200]!r}")
                    continue
                sentences += len(json.loads(body)["data"])
                latencies.append(time.perf_counter() - t0)
        finally:
            await connection.close()

    async def sample_memory() -> None:
        while time.perf_counter() < stop:
            rss.append((time.perf_counter() - start, sum(rss_bytes(p) for p in process_tree(pid))))
            await asyncio.sleep(0.25)

    tree = process_tree(pid)
    cpu_before = {p: cpu_seconds(p) for p in tree}
    own_before = os.times()
    await asyncio.gather(sample_memory(), *(client(k) for k in range(args.clients)))
    elapsed = time.perf_counter() - start
    own_after = os.times()
    cpu = {p: cpu_seconds(p) - cpu_before[p] for p in tree}
    quarters = [
        max((b for t, b in rss if q * seconds / 4 <= t < (q + 1) * seconds / 4), default=0) for q in range(4)
    ]
    return {
        "requests": len(latencies) + len(errors),
        "errors": len(errors),
        "error_samples": errors[:5],
        "sentences": sentences,
        "seconds": round(elapsed, 2),
        "sentences_per_s": round(sentences / elapsed, 1),
        "latency_ms_p50": round(float(np.percentile(latencies, 50)) * 1e3, 1) if latencies else None,
        "latency_ms_p99": round(float(np.percentile(latencies, 99)) * 1e3, 1) if latencies else None,
        "rss_mib_peak_by_quarter": [round(b / 2**20, 1) for b in quarters],
        "cpu_s_server_http": round(cpu.get(pid, 0.0), 2),
        "cpu_s_server_model": round(sum(v for p, v in cpu.items() if p != pid), 2),
        "cpu_s_load_generator": round(
            (own_after.user - own_before.user) + (own_after.system - own_before.system), 2
        ),
    }


def in_process_per_request(encoder: Any, corpus: list[str], batch: int, seconds: float) -> float:
    """Sentences/s encoding `batch` sentences per call, one call after another."""
    rng = random.Random(0)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        encoder.encode(rng.sample(corpus, batch), show_progress_bar=False)
        done += batch
    return done / (time.perf_counter() - start)


def serve_and_load(
    args: argparse.Namespace, corpus: list[str], extra: list[str], env: dict[str, str]
) -> dict[str, Any] | None:
    """Start `munjang serve` (with `extra` arguments and `env`), load it, stop it; None if it did not
    come up."""
    port = free_port()
    command = [sys.executable, "-m", "munjang.cli", "serve", "--port", str(port), *extra]
    command += ["--precision", args.precision, "--model", args.model or "all-MiniLM-L6-v2"]
    if args.batch_tokens:
        command += ["--batch-tokens", str(args.batch_tokens)]
    if args.model_processes is not None:
        command += ["--model-processes", str(args.model_processes)]
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"munjang-server-load-{port}.log", "w")  # noqa: SIM115
    server = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env}
    )  # a pipe nobody reads would block it
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            print("error: the server did not come up", file=sys.stderr)
            return None
        if args.warmup > 0:
            asyncio.run(load(url, corpus, args, server.pid, args.warmup))
        return asyncio.run(load(url, corpus, args, server.pid, args.seconds))
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def compare_tracing(
    args: argparse.Namespace, corpus: list[str], env: dict[str, Any], in_process: float
) -> int:
    """Servers with OpenTelemetry absent, off and on, in `--rounds` interleaved rounds: the median
    sentences/s and latency of each."""
    import tempfile

    # FastAPI requires the OpenTelemetry API itself: "absent" is munjang[otel] (the SDK and the
    # exporter) not installed, as the server's Python sees it (sitecustomize runs at its start).
    hidden = Path(tempfile.mkdtemp(prefix="munjang-no-otel-"))
    (hidden / "sitecustomize.py").write_text(
        "import sys\nsys.modules['opentelemetry.sdk'] = None\nsys.modules['opentelemetry.exporter'] = None\n"
    )
    path = os.pathsep.join(p for p in (str(hidden), os.environ.get("PYTHONPATH", "")) if p)
    variants: dict[str, tuple[list[str], dict[str, str]]] = {
        "absent": (["--no-mcp"], {"PYTHONPATH": path}),
        "off": (["--no-mcp"], {}),
        "on": (["--no-mcp", "--otlp-endpoint", f"http://127.0.0.1:{free_port()}/v1/traces"], {}),
    }
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    for round_ in range(args.rounds):
        for name, (extra, variant_env) in variants.items():
            result = serve_and_load(args, corpus, extra, variant_env)
            if result is None:
                return 1
            runs[name].append(result)
            print(
                f"round {round_ + 1} {name:<7} {result['sentences_per_s']:>8} sentences/s  "
                f"p50 {result['latency_ms_p50']} ms  p99 {result['latency_ms_p99']} ms  "
                f"errors {result['errors']}"
            )
    summary = {
        name: {
            "sentences_per_s": [r["sentences_per_s"] for r in results],
            "median_sentences_per_s": round(statistics.median(r["sentences_per_s"] for r in results), 1),
            "median_latency_ms_p50": round(statistics.median(r["latency_ms_p50"] for r in results), 1),
            "median_latency_ms_p99": round(statistics.median(r["latency_ms_p99"] for r in results), 1),
            "errors": sum(r["errors"] for r in results),
        }
        for name, results in runs.items()
    }
    base = summary["absent"]["median_sentences_per_s"]
    for name, figures in summary.items():
        figures["ratio_to_absent"] = round(figures["median_sentences_per_s"] / base, 3)
        print(f"  {name:<7} {figures}")
    if not args.no_write:
        payload = {
            "model": args.model or "all-MiniLM-L6-v2 (embedded)",
            "clients": args.clients,
            "batch": args.batch,
            "encoding_format": args.encoding,
            "seconds_per_run": args.seconds,
            "rounds": args.rounds,
            "cores": os.cpu_count(),
            "in_process_sentences_per_s": round(in_process, 1),
            "tracing": summary,
        }
        print(f"wrote {write_result(args.name, payload, env=env)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--batch", type=int, default=8, help="sentences per request (default 8)")
    p.add_argument("--encoding", choices=("base64", "float"), default="base64")
    p.add_argument("--precision", default="fp32")
    p.add_argument("--n", type=int, default=4000, help="corpus size (default 4000 English sentences)")
    p.add_argument("--warmup", type=float, default=20.0, help="seconds of uncounted load first")
    p.add_argument("--batch-tokens", type=int, default=None, help="munjang serve --batch-tokens")
    p.add_argument("--model-processes", type=int, default=None, help="munjang serve --model-processes")
    p.add_argument("--tracing", action="store_true", help="compare OpenTelemetry absent / off / on")
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds of --tracing (default 2)")
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--name", default="server_load", help="result file name (bench/results/NAME.json)")
    args = p.parse_args(argv)
    env = print_environment()
    import munjang

    corpus = load_corpus(args.n, seed=0, lang="en")
    encoder = munjang.load_encoder(args.model, device="cpu", precision=args.precision)
    encoder.warmup()
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        encoder.encode(corpus, show_progress_bar=False)
        times.append(time.perf_counter() - t0)
    in_process = len(corpus) / statistics.median(times)
    per_request = in_process_per_request(encoder, corpus, args.batch, 5.0)
    del encoder
    print(
        f"in-process: {in_process:.1f} sentences/s (whole corpus), {per_request:.1f} ({args.batch} per call)"
    )

    if args.tracing:
        return compare_tracing(args, corpus, env, in_process)
    result = serve_and_load(args, corpus, [], {})
    if result is None:
        return 1
    result["in_process_sentences_per_s"] = round(in_process, 1)
    result["ratio_to_in_process"] = round(result["sentences_per_s"] / in_process, 3)
    result["in_process_per_request_sentences_per_s"] = round(per_request, 1)
    result["ratio_to_in_process_per_request"] = round(result["sentences_per_s"] / per_request, 3)
    for key, value in result.items():
        print(f"  {key:<28} {value}")
    if not args.no_write:
        payload = {
            "model": args.model or "all-MiniLM-L6-v2 (embedded)",
            "clients": args.clients,
            "batch": args.batch,
            "encoding_format": args.encoding,
            "precision": args.precision,
            "model_processes": "server default" if args.model_processes is None else args.model_processes,
            "batch_tokens": args.batch_tokens or "server default",
            "cores": os.cpu_count(),
            **result,
        }
        print(f"wrote {write_result(args.name, payload, env=env)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
