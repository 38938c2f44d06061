"""Why PostgreSQL's first dense search after a commit costs more than the next: each HNSW segment's
walk, and where its pages came from, right after a commit and once more.

On a collection kept by `bench/collection_scale.py --backend postgres --index hnsw --keep` (its
database folder is printed; this bench adds passages to it), after warming every segment: rounds of
an add of `--batch` Korean passages through `Collection.add` (Kiwi tokens, the cheap encoder, BM25
postings, the commit), then the dense statement a hybrid search runs (every segment asked for its
share of 400, as for 100 candidates of documents stored as passages) under `EXPLAIN (ANALYZE,
BUFFERS)`, twice: each segment's milliseconds, the statement's, and its buffers (read from outside
PostgreSQL's shared buffers, dirtied), plus any autovacuum or other background work running as the
first one starts. `--beside` runs the statement on the collection's second connection, where a
hybrid search runs its dense side while BM25 runs on the first.

    python bench/collection_scale.py --backend postgres --index hnsw --huge-pages --batch 100000 \
        --batches 10 --keep
    python bench/postgres_after_commit.py --database /tmp/munjang-scale-XXXX/pg
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from collection_scale import QUERIES, passages
from common import load_corpus, print_environment, write_result

K = 400  # the dense side of a hybrid search over documents stored as passages (100 candidates x 4)


def explained(store: Any, sql: str, params: list[Any]) -> dict[str, Any]:
    """One run of the statement: its time, each segment's, and its buffers."""
    lines = [row[0] for row in store.conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params).fetchall()]
    segments = [
        float(re.search(r"actual time=[\d.]+\.\.([\d.]+)", line).group(1))  # type: ignore[union-attr]
        for line in lines
        if "Index Scan using documents_embedding_hnsw" in line
    ]
    buffers = next((line.strip() for line in lines if "Buffers:" in line), "")
    counts = {key: int(n) for key, n in re.findall(r"(hit|read|dirtied|written)=(\d+)", buffers)}
    total = float(re.search(r"Execution Time: ([\d.]+)", lines[-1]).group(1))  # type: ignore[union-attr]
    planning = next(
        (float(m.group(1)) for line in lines if (m := re.search(r"Planning Time: ([\d.]+)", line))), None
    )
    return {"ms": total, "planning_ms": planning, "segment_ms": segments, "buffers": counts}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True, help="the kept collection's pgserver folder")
    parser.add_argument("--collection", default="scale")
    parser.add_argument("--batch", type=int, default=5000, help="passages added per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--beside",
        action="store_true",
        help="explain on the collection's second connection, where a hybrid search runs its dense side",
    )
    parser.add_argument("--name", default="postgres_after_commit")
    args = parser.parse_args(argv)
    environment = print_environment()
    import numpy as np
    import pgserver
    import psycopg

    from munjang.search import Collection
    from munjang.search.backends.postgres.segments import first_asks, graphs, search_sql

    server = pgserver.get_server(args.database, cleanup_mode="stop")
    url = server.get_uri()
    collection = Collection.open(args.collection, backend=url)
    collection.warm_up()
    store: Any = collection.store
    explaining: Any = store.beside() if args.beside else store
    size = store.hnsw_segment_size
    vector = np.asarray(collection.query_encoder.encode([QUERIES[1]])[0], dtype=np.float32)
    pool = load_corpus(5000, seed=0, lang="ko")
    monitor = psycopg.connect(url, autocommit=True)

    def statement() -> tuple[str, list[Any]]:
        last = store.watermark().label
        segments = -(-last // size)
        asks = first_asks(K, graphs([], segments), last, size)
        return search_sql(store.t("documents"), "<=>", "TRUE", graphs([], segments), range(segments), size), [
            x for n in asks for x in (vector, vector, n)
        ]

    explaining.conn.execute(f"SET hnsw.ef_search = {max(first_asks(K, graphs([], 8), 8 * size, size))}")
    for _ in range(3):  # every segment's pages in shared buffers, the plans made
        explained(explaining, *statement())
    first = store.watermark().label + 1
    rows = []
    for turn in range(args.rounds):
        begun = time.perf_counter()
        ids = [f"after-commit-{first}-{turn}-{i}" for i in range(args.batch)]
        collection.add(ids, passages(args.batch, first + turn * args.batch, pool), show_progress_bar=False)
        added = time.perf_counter() - begun
        background = monitor.execute(
            "SELECT backend_type || ': ' || left(query, 80) FROM pg_stat_activity "
            "WHERE backend_type <> 'client backend' AND state = 'active'"
        ).fetchall()
        sql, params = statement()
        after, again = explained(explaining, sql, params), explained(explaining, sql, params)
        row = {
            "passages": store.watermark().label,
            "add_s": round(added, 1),
            "background_at_first": [b[0] for b in background],
            "first": after,
            "again": again,
        }
        rows.append(row)
        print({k: v for k, v in row.items()}, flush=True)
    payload = {
        "batch": args.batch,
        "k": K,
        "rows": rows,
        "median_first_ms": round(statistics.median(r["first"]["ms"] for r in rows), 1),
        "median_again_ms": round(statistics.median(r["again"]["ms"] for r in rows), 1),
        "connection": "second (beside)" if args.beside else "first",
        "median_segment_first_ms": round(
            statistics.median(t for r in rows for t in r["first"]["segment_ms"]), 2
        ),
        "median_segment_again_ms": round(
            statistics.median(t for r in rows for t in r["again"]["segment_ms"]), 2
        ),
        "pages_read_outside_shared_buffers_at_first": sum(r["first"]["buffers"].get("read", 0) for r in rows),
    }
    print({k: v for k, v in payload.items() if k != "rows"})
    monitor.close()
    collection.close()
    server.cleanup()
    print(f"wrote {write_result(args.name, payload, environment)}")


if __name__ == "__main__":
    main()
