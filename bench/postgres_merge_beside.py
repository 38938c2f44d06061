"""What a background merge of PostgreSQL HNSW segments does to the searches beside it, by how many
parallel workers the merge's index build may take: pgvector builds an HNSW index with PostgreSQL's
parallel maintenance workers (the server's `max_parallel_maintenance_workers`, 2 by default), so on
a small database server a merge can take every core from the searches.

On a collection kept by `bench/collection_scale.py --backend postgres --index hnsw --keep` (its
database folder is printed), rounds of: hybrid searches over a quiet collection, then the same
searches while munjang's merge (`postgres_graph_merge.GraphMerger.build`) builds a merged graph over
`--segments` full segments that the collection's layout does not use (built, timed, then dropped,
so the collection is left as it was), the merge allowed each number of `--workers` in turn
(munjang's default, `postgres_segments.MERGE_WORKERS`, is 0; PostgreSQL's is 2), in the opposite
order in odd rounds, each after a `CHECKPOINT` (needs a superuser, as pgserver's). Reported per
setting: the build's seconds, the database server's CPU-seconds, the most parallel workers seen,
and the search latencies quiet and beside the build (median, p90, max) with their ratio.

    sysctl vm.nr_hugepages=3300   # the kept run used huge pages
    python bench/postgres_merge_beside.py --database /tmp/munjang-scale-XXXX/pg
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from collection_scale import QUERIES, cpu_seconds, postmaster_pid
from common import print_environment, write_result


def latencies(collection: Any, count: int, pause: float, until: threading.Event | None = None) -> list[float]:
    """Hybrid search times (ms), the queries in turn, `count` of them or until `until` is set."""
    out: list[float] = []
    while (until is None and len(out) < count) or (until is not None and not until.is_set()):
        started = time.perf_counter()
        collection.search(QUERIES[len(out) % len(QUERIES)], 10, mode="hybrid")
        out.append((time.perf_counter() - started) * 1000)
        time.sleep(pause)
    return out


def beside_build(
    collection: Any, merger: Any, conn: Any, graph: tuple[int, int], size: int, monitor: Any, pause: float
) -> dict[str, Any]:
    """Search latencies while `merger` builds `graph`'s index on `conn` (then dropped), the build's
    seconds, and the most parallel workers seen in the database while it ran."""
    done, seen = threading.Event(), [0]
    failure: list[BaseException] = []

    def build() -> None:
        try:
            merger.build(conn, graph, size)
        except BaseException as error:  # raised below, once the searches stop
            failure.append(error)
        finally:
            done.set()

    def watch() -> None:
        while not done.wait(0.5):
            sql = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker'"
            seen[0] = max(seen[0], int(monitor.execute(sql).fetchone()[0]))

    started = time.perf_counter()
    threads = [threading.Thread(target=build), threading.Thread(target=watch)]
    for thread in threads:
        thread.start()
    times = latencies(collection, 0, pause, until=done)
    for thread in threads:
        thread.join()
    build_s = time.perf_counter() - started
    if failure:
        raise failure[0]
    return {"build_s": round(build_s, 1), "parallel_workers_seen": seen[0], "times": times}


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "searches": len(ordered),
        "median_ms": round(statistics.median(ordered), 1),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 1),
        "max_ms": round(ordered[-1], 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True, help="the kept collection's pgserver folder")
    parser.add_argument("--collection", default="scale")
    parser.add_argument("--segments", type=int, default=2, help="full segments the probe graph covers")
    parser.add_argument("--workers", default="2,0", help="parallel maintenance workers, in turn")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--pause", type=float, default=0.2, help="seconds between searches")
    parser.add_argument("--name", default="postgres_merge_beside")
    args = parser.parse_args(argv)
    environment = print_environment()
    import pgserver
    import psycopg

    from munjang.search import Collection
    from munjang.search.backends.postgres.connect import connect
    from munjang.search.backends.postgres.graph_merge import GraphMerger
    from munjang.search.backends.postgres.segments import index_name

    server = pgserver.get_server(args.database, cleanup_mode="stop")
    url = server.get_uri()
    server_pid = postmaster_pid(Path(args.database))
    collection = Collection.open(args.collection, backend=url, readonly=True)
    collection.warm_up()
    store: Any = collection.store  # a PostgresStore: its schema and table names
    conn = connect(url)
    layout, last_label, size = GraphMerger(url, store.schema, store.t).layout(conn)
    merged = sum(count for _, count in layout if count > 1)
    graph = (merged, args.segments)  # full segments after the merged graphs, not merged yet
    if (merged + args.segments) * size > last_label:
        raise SystemExit(f"the collection has no {args.segments} full segments after its merged graphs")
    print(f"{last_label:,} passages; layout {layout}; probe graph {graph}: {args.segments * size:,} passages")
    monitor = psycopg.connect(url, autocommit=True)
    latencies(collection, 2 * len(QUERIES), 0.0)  # pages read once
    rows = []
    settings = [int(w) for w in args.workers.split(",")]
    for round_ in range(args.rounds):
        for workers in settings if round_ % 2 == 0 else settings[::-1]:  # in turn, so drift cancels
            # The last build's pages written out first: the quiet searches meet no checkpoint's work.
            conn.execute("CHECKPOINT")
            quiet = summary(latencies(collection, 6 * len(QUERIES), args.pause))
            merger = GraphMerger(url, store.schema, store.t, workers=workers)
            cpu = cpu_seconds(server_pid)[1]
            built = beside_build(collection, merger, conn, graph, size, monitor, args.pause)
            database_cpu = cpu_seconds(server_pid)[1] - cpu
            conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{store.schema}".{index_name(graph)}')
            beside = summary(built["times"])
            row = {
                "round": round_,
                "workers": workers,
                "parallel_workers_seen": built["parallel_workers_seen"],
                "build_s": built["build_s"],
                "database_cpu_s": round(database_cpu, 1),
                "quiet": quiet,
                "beside_build": beside,
                "median_beside_vs_quiet": round(beside["median_ms"] / quiet["median_ms"], 2),
            }
            rows.append(row)
            print(row, flush=True)
    collection.close()
    conn.close()
    monitor.close()
    server.cleanup()
    payload = {"passages": last_label, "probe_graph_passages": args.segments * size, "pause_s": args.pause}
    print(f"wrote {write_result(args.name, {**payload, 'rows': rows}, environment)}")


if __name__ == "__main__":
    main()
