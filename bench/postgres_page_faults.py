"""What PostgreSQL's page faults cost a search: with 4 kB pages, huge pages, and glibc's malloc told
to keep what it frees.

Each PostgreSQL backend maps the shared buffer pool into its own address space as it touches it:
with 4 kB pages, the first touch of each page is a page fault, so a search that walks onto buffers
its backend has not touched (a new connection, or pages a commit has just filled) pays thousands of
them. With `huge_pages = on` one fault maps 2 MB. Apart from the pool, each search's statement
allocates memory that glibc's malloc maps and unmaps again (blocks above its mmap threshold, and
the heap's top trimmed back to the system), a thousand faults or so a search whatever the pages:
the third setting starts PostgreSQL with `MALLOC_MMAP_THRESHOLD_` and `MALLOC_TRIM_THRESHOLD_`
(glibc's environment variables) raised, so a backend keeps that memory. On a collection kept by
`bench/collection_scale.py --backend postgres --index hnsw --keep`, the server is restarted with
each setting, the pool warmed, and dense searches (100 documents: the 400 passages a grouped search
asks for) are timed on new connections: the first search of a connection, the queries new to it,
and the same queries again; each with the minor page faults of its backend (Linux `/proc`).

    sysctl vm.nr_hugepages=3300                                   # as root; what the error says
    python bench/postgres_page_faults.py --database /tmp/munjang-scale-XXXX/pg
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from collection_scale import require_huge_pages
from common import load_corpus, print_environment, write_result


def minor_faults(pid: int) -> int:
    """The minor page faults of process `pid` so far (Linux /proc/<pid>/stat, field 10)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


# glibc's malloc keeps blocks below 64 MB on its heap and trims the heap's top only past 256 MB.
MALLOC_ENVIRONMENT = {"MALLOC_MMAP_THRESHOLD_": str(64 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(256 * 2**20)}
SETTINGS = {
    "4kB_pages": ("off", {}),
    "huge_pages": ("on", {}),
    "huge_pages_and_malloc_thresholds": ("on", MALLOC_ENVIRONMENT),
}


def restart(database: str, huge_pages: str, environment: dict[str, str]) -> Any:
    """The kept server, restarted with `huge_pages` ("on" or "off") and the malloc variables of
    `environment` (none: glibc's defaults) in its processes' environment."""
    import pgserver
    import psycopg

    server = pgserver.get_server(database, cleanup_mode="stop")
    if huge_pages == "on":
        require_huge_pages(server)
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET huge_pages = '{huge_pages}'")
    server.cleanup()
    for name in MALLOC_ENVIRONMENT:  # the server started next inherits this process's environment
        os.environ.pop(name, None)
    os.environ.update(environment)
    return pgserver.get_server(database, cleanup_mode="stop")


def connection(url: str, name: str, queries: list[str]) -> list[tuple[float, int]]:
    """One new connection (a collection opened afresh): (ms, backend minor faults) of each query,
    then of each again."""
    from munjang.search import Collection

    collection = Collection.open(name, backend=url, readonly=True)
    collection.query_encoder.encode(queries[:1])  # the encoder loads outside the timings
    pid = int(collection.store.conn.execute("SELECT pg_backend_pid()").fetchone()[0])
    out = []
    for query in queries + queries:
        faults, started = minor_faults(pid), time.perf_counter()
        collection.search(query, 100, mode="dense")
        out.append(((time.perf_counter() - started) * 1000, minor_faults(pid) - faults))
    collection.close()
    return out


def summary(runs: list[list[tuple[float, int]]], n: int) -> dict[str, Any]:
    """Medians over connections: the first search, the other queries new to the connection, and
    the queries again."""
    parts = {
        "first_search": [run[0] for run in runs],
        "queries_new_to_the_connection": [x for run in runs for x in run[1:n]],
        "queries_again": [x for run in runs for x in run[n:]],
    }
    return {
        name: {
            "median_ms": round(statistics.median(ms for ms, _ in xs), 1),
            "median_minor_faults": int(statistics.median(f for _, f in xs)),
        }
        for name, xs in parts.items()
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="the kept collection's pgserver folder")
    parser.add_argument("--collection", default="scale")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--connections", type=int, default=3)
    parser.add_argument("--name", default="postgres_page_faults")
    args = parser.parse_args(argv)
    environment = print_environment()
    queries = load_corpus(2000, seed=11, lang="ko")[1000 : 1000 + args.queries]
    results: dict[str, Any] = {}
    for setting, (huge_pages, malloc) in SETTINGS.items():
        server = restart(args.database, huge_pages, malloc)
        url = server.get_uri()
        for _ in range(2):  # the pool warm: every page these searches walk read into it
            connection(url, args.collection, queries)
        runs = [connection(url, args.collection, queries) for _ in range(args.connections)]
        results[setting] = summary(runs, args.queries)
        print(setting, results[setting], flush=True)
        server.cleanup()
    ratios = {
        setting: {
            part: round(results["4kB_pages"][part]["median_ms"] / results[setting][part]["median_ms"], 2)
            for part in results[setting]
        }
        for setting in results
    }
    payload = {
        "database": args.database,
        "queries": args.queries,
        "connections": args.connections,
        "search": "dense, 100 documents (400 passages asked), readonly collection opened per connection",
        "malloc_environment": MALLOC_ENVIRONMENT,
        "settings": results,
        "4kB_pages_ms_over_each": ratios,
    }
    print(f"wrote {write_result(args.name, payload, environment)}")


if __name__ == "__main__":
    main()
