"""Zero downtime: searches against an alias while it switches to a reindexed collection.

Two collections of the same Korean passages in a collections folder: `v1` built with
multilingual-e5-small, `v2` reindexed from it (`Collection.reindex`, a smaller passage budget) plus
one marker document. The alias `prod` points at `v1`; a `munjang serve --collections-dir` answers
CLIENTS concurrent clients, each sending hybrid searches to /v1/collections/prod/search one after
another for SECONDS; halfway through, PUT /v1/aliases/prod switches it to `v2`. Reported: errors
(transport failures and non-200 answers, 5xx counted apart), and p50 / p99 latency of the searches
started before the switch (more than 2 s before), around it (within 2 s) and after it; and whether
every search started after the switch answered from `v2` (the marker query finds the marker).

    python bench/alias_switch.py --clients 20 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_corpus, print_environment, running_server, write_result

MARKER = "알리아스 전환 표식 문서입니다"


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)


async def _load(url: str, clients: int, seconds: float, queries: list[str]) -> dict[str, Any]:
    import httpx

    started = time.monotonic()
    records: list[tuple[float, float, int, bool]] = []  # start, seconds, status (0: transport), marker hit
    switched: list[float] = []

    async def client(n: int, http: httpx.AsyncClient) -> None:
        i = n
        while time.monotonic() - started < seconds:
            query = MARKER if i % 5 == 0 else queries[i % len(queries)]
            begin = time.monotonic()
            try:
                r = await http.post(f"{url}/v1/collections/prod/search", json={"query": query, "top_k": 10})
                status = r.status_code
                marker = status == 200 and query == MARKER and r.json()["data"][0]["id"] == "marker"
            except httpx.HTTPError:
                status, marker = 0, False
            records.append(
                (begin - started, time.monotonic() - begin, status, marker if query == MARKER else None)
            )
            i += clients

    async def switch(http: httpx.AsyncClient) -> None:
        await asyncio.sleep(seconds / 2)
        switched.append(time.monotonic() - started)
        r = await http.put(f"{url}/v1/aliases/prod", json={"collection": "v2"})
        assert r.status_code == 200, r.text

    limits = httpx.Limits(max_connections=clients + 2)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        await asyncio.gather(*(client(n, http) for n in range(clients)), switch(http))
    at = switched[0]
    phases: dict[str, list[float]] = {"before": [], "during": [], "after": []}
    for begin, took, _, _ in records:
        phase = "before" if begin < at - 2 else "during" if begin < at + 2 else "after"
        phases[phase].append(took)
    after_marker = [m for begin, _, _, m in records if m is not None and begin > at + 0.5]
    return {
        "requests": len(records),
        "errors": sum(1 for r in records if r[2] != 200),
        "server_errors_5xx": sum(1 for r in records if r[2] >= 500),
        "switch_at_s": round(at, 2),
        "latency_ms": {
            phase: {"n": len(v), "p50": _percentile(v, 0.5), "p99": _percentile(v, 0.99)}
            for phase, v in phases.items()
        },
        "marker_searches_after_switch": len(after_marker),
        "marker_found_after_switch": sum(after_marker),
        "mean_ms": round(statistics.mean(r[1] for r in records) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--name", default="alias_switch")
    args = parser.parse_args()
    environment = print_environment()
    import munjang
    from munjang.models import pull
    from munjang.search import Collection

    folder = str(pull("multilingual-e5-small").folder)
    encoder = munjang.load_encoder(folder, device="cpu")
    texts = load_corpus(args.documents, seed=1, lang="ko")
    work = Path(tempfile.mkdtemp(prefix="munjang-alias-"))
    try:
        with Collection.create(work / "v1", folder, encoder=encoder) as v1:
            v1.add([f"d{i}" for i in range(len(texts))], texts, show_progress_bar=False)
            with v1.reindex(work / "v2", folder, encoder=encoder, chunking={"max_tokens": 64}) as v2:
                v2.add(["marker"], [MARKER])
        from munjang.search.collection.aliases import set_alias

        set_alias(work, "prod", "v1")
        queries = load_corpus(200, seed=7, lang="ko")
        with running_server(["--model", folder, "--collections-dir", str(work)]) as (url, _):
            result = asyncio.run(_load(url, args.clients, args.seconds, queries))
        result = {"clients": args.clients, "seconds": args.seconds, "documents": args.documents, **result}
        print(result)
        print("wrote", write_result(args.name, result, environment))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
