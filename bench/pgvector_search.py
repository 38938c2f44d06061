"""PostgreSQL collections at 100k documents: pgvector HNSW recall@10 against exact search, and query
latency through munjang's own search path (`PostgresDense.search`: one SQL round trip per query), beside
the embedded HNSW index (usearch) on the same vectors in the same run.

Data: `search_scale.make_dataset`'s seeded clustered unit vectors (d = 384, 2,048 centres), the data
the embedded index was measured on, so the figures line up with bench/search_scale.py. The vectors are
loaded with COPY into a collection schema made by `PostgresStore.create_schema`, then pgvector builds
its HNSW index (M 16, ef_construction 128, as munjang's default) in one pass. For each ef_search:
recall@10 against numpy exact top-10 and latency (batch 1, mean and p50/p95 over the queries). Also:
exact search inside PostgreSQL (a sequential scan), and a selective filter (1 % of the documents), where
pgvector's post-filtered graph walk comes back short and munjang re-runs the query exactly: with the
jsonb metadata index (GIN), then without it, as collections made before it was added ran.

    python bench/pgvector_search.py                      # 100k, 1,000 queries -> results/pgvector_search.json
    python bench/pgvector_search.py --n 20000 --queries 200 --name pgvector_search-quick
    python bench/pgvector_search.py --url postgresql://user:pw@host/db   # your own PostgreSQL + pgvector

Without --url a local PostgreSQL 16 + pgvector is started with `pgserver` (a dev dependency).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result
from munjang.search.backends.filters import compile_filter
from munjang.search.backends.postgres.dense import PostgresDense
from munjang.search.backends.postgres.store import PostgresStore
from munjang.search.index.ann import HNSWIndex
from search_scale import make_dataset

K = 10
GROUPS = 100  # metadata {"group": i % GROUPS}: a filter on one group keeps 1 % of the documents


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="documents (default 100000)")
    parser.add_argument("--queries", type=int, default=1000, help="queries (default 1000)")
    parser.add_argument("--ef", default="16,32,64,128,256", help="ef_search values, comma-separated")
    parser.add_argument("--url", help="a postgresql:// URL (default: start pgserver in a temporary folder)")
    parser.add_argument("--name", default="pgvector_search", help="result file name")
    return parser.parse_args(argv)


def exact_top_k(corpus: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    scores = queries @ corpus.T
    top = np.argpartition(-scores, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1)
    return np.take_along_axis(top, order, axis=1)


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f[f >= 0]) & set(t)) / len(t) for f, t in zip(found, truth, strict=True)]))


def timed(search: Any, queries: np.ndarray) -> tuple[np.ndarray, dict[str, float]]:
    """Run `search(one_query) -> ids` per query; (ids (q, K), latency figures in ms)."""
    found = np.full((len(queries), K), -1, dtype=np.int64)
    times = []
    for i, q in enumerate(queries):
        start = time.perf_counter()
        ids = search(q)
        times.append((time.perf_counter() - start) * 1000)
        found[i, : len(ids)] = ids[:K]
    ordered = sorted(times)
    return found, {
        "mean_ms": round(statistics.fmean(times), 3),
        "p50_ms": round(ordered[len(ordered) // 2], 3),
        "p95_ms": round(ordered[int(len(ordered) * 0.95)], 3),
    }


def load(store: PostgresStore, corpus: np.ndarray) -> float:
    """COPY the vectors in as documents labelled 1..n (id "d<i>", metadata group); seconds taken."""
    start = time.perf_counter()
    cur = store.conn.cursor()
    with store.conn.transaction():
        with cur.copy(
            f"COPY {store.t('documents')} (label, id, text, metadata, text_hash, tokens, embedding) "
            "FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int8", "text", "text", "jsonb", "text", "jsonb", "vector"])
            for i, vector in enumerate(corpus):
                row = [
                    i + 1,
                    f"d{i}",
                    f"document {i}",
                    Jsonb({"group": i % GROUPS}),
                    f"h{i}",
                    Jsonb([]),
                    vector,
                ]
                copy.write_row(row)
        cur.execute(f"UPDATE {store.t('state')} SET last_label = %s", (len(corpus),))
    store.conn.execute(f"ANALYZE {store.t('documents')}")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    env = print_environment()
    corpus, queries = make_dataset(args.n, args.queries, distribution="clustered")
    truth = exact_top_k(corpus, queries, K)
    server = None
    url = args.url
    if url is None:
        import pgserver

        server = pgserver.get_server(tempfile.mkdtemp(prefix="munjang-pg-"), cleanup_mode="delete")
        url = server.get_uri()
    store = PostgresStore(url, f"bench_{args.n}")
    store.drop()
    config = {"dim": corpus.shape[1], "metric": "cosine", "index": "exact", "hnsw": {}}
    store.create_schema(config)
    result: dict[str, Any] = {"n": args.n, "queries": args.queries, "k": K, "distribution": "clustered"}
    try:
        version = store.conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        result["postgres"] = store.conn.execute("SHOW server_version").fetchone()[0]
        result["pgvector"] = version[0] if version else None
        result["load_s"] = round(load(store, corpus), 2)
        print(f"loaded {args.n} vectors in {result['load_s']} s")

        exact = PostgresDense(store, {**config, "index": "exact"})
        subset = queries[: min(100, len(queries))]
        found, latency = timed(lambda q: exact.search(store, q[None], K, None)[0][0] - 1, subset)
        result["postgres_exact"] = {"recall@10": recall(found, truth[: len(subset)]), **latency}
        print(f"postgres exact (sequential scan): {result['postgres_exact']}")

        store.conn.execute("SET maintenance_work_mem = '1GB'")
        start = time.perf_counter()
        store.conn.execute(
            f"CREATE INDEX documents_embedding_hnsw ON {store.t('documents')} "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128)"
        )
        result["pgvector_build_s"] = round(time.perf_counter() - start, 2)
        dense = PostgresDense(store, {**config, "index": "hnsw"})
        result["pgvector_index_bytes"] = dense.memory_bytes()
        print(
            f"pgvector HNSW built in {result['pgvector_build_s']} s, {result['pgvector_index_bytes']} bytes"
        )

        usearch = HNSWIndex(corpus.shape[1], connectivity=16, expansion_add=128, threads=0)
        start = time.perf_counter()
        usearch.add(np.arange(1, args.n + 1), corpus)
        result["usearch_build_s"] = round(time.perf_counter() - start, 2)
        result["usearch_index_bytes"] = usearch.memory_bytes()

        result["ef_search"] = []
        for ef in [int(x) for x in args.ef.split(",")]:
            dense.ef_search = ef
            found, pg = timed(lambda q: dense.search(store, q[None], K, None)[0][0] - 1, queries)
            pg_recall = recall(found, truth)
            found, us = timed(lambda q: usearch.search(q[None], K, expansion=ef)[0][0] - 1, queries)  # noqa: B023
            row = {
                "ef_search": ef,
                "pgvector": {"recall@10": round(pg_recall, 4), **pg},
                "usearch": {"recall@10": round(recall(found, truth), 4), **us},
            }
            result["ef_search"].append(row)
            print(row)

        where = compile_filter({"group": 7}, dialect="postgres")
        members = np.flatnonzero(np.arange(args.n) % GROUPS == 7)
        filtered_truth = members[exact_top_k(corpus[members], queries, K)]
        dense.ef_search = 64
        found, latency = timed(lambda q: dense.search(store, q[None], K, None, where)[0][0] - 1, subset)
        result["filtered_1pct"] = {
            "ef_search": 64,
            "recall@10": round(recall(found, filtered_truth[: len(subset)]), 4),
            **latency,
        }
        print(f"filtered (1 % of documents): {result['filtered_1pct']}")
        # The same queries as collections made before the metadata index existed ran them: the
        # filter evaluated on every row.
        store.conn.execute(f'DROP INDEX "{store.schema}".documents_metadata_gin')
        store.conn.execute(f"ANALYZE {store.t('documents')}")
        found, latency = timed(lambda q: dense.search(store, q[None], K, None, where)[0][0] - 1, subset)
        result["filtered_1pct_without_metadata_index"] = {
            "recall@10": round(recall(found, filtered_truth[: len(subset)]), 4),
            **latency,
        }
        print(f"filtered, no metadata index: {result['filtered_1pct_without_metadata_index']}")
    finally:
        store.drop()
        store.close()
        if server is not None:
            server.cleanup()
    print(f"result: {write_result(args.name, result, env)}")


if __name__ == "__main__":
    main()
