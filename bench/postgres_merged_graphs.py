"""What merging PostgreSQL HNSW segments buys a search at 1M, and what a merge costs.

One table of 1,000,000 Korean passages' vectors (the cheap encoder of `collection_scale.py`: a random
64-d static model on multilingual-e5-small's tokenizer), loaded with COPY; pgvector's HNSW as partial
indexes over label ranges, built as munjang builds them (m 16, ef_construction 128), in layouts:

- `segments_8`: eight graphs of 131,072 (munjang before merging);
- `merged_4_plus_segments`: one graph of 524,288 and the four segments after it (munjang's layout at
  1M with merging, `postgres_graph_merge.py`);
- `merged_two_of_4`: two graphs of 524,288 (the layout once segment 7 fills);
- `one_graph`: one index over everything (the bound: one walk).

Each searched as munjang's dense side searches (`postgres_dense.PostgresDense._segmented`: each graph
first asked for its share of k plus the margin, walks of one `ef_search` in one statement, graphs that
may hold more asked again) for the k = 400 passages a hybrid search over documents asks for, by 40
Korean queries: the share of the exact best 10 and 100 found, the median time of one search (two
rounds), the seconds each merged graph's index took to build (a merge's cost), and the indexes' size.

    python bench/postgres_merged_graphs.py                  # about an hour on 2 cores
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from collection_scale import cheap_encoder, passages
from common import load_corpus, print_environment, write_result

SIZE = 131_072
OPTIONS = "WITH (m = 16, ef_construction = 128)"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--folder", default="/tmp/munjang-merged-graphs", help="kept between runs")
    parser.add_argument("--k", type=int, default=400)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--maintenance-work-mem", default="3GB", help="so each graph is built in memory")
    parser.add_argument("--name", default="postgres_merged_graphs")
    args = parser.parse_args(argv)
    environment = print_environment()
    import pgserver
    import psycopg
    from pgvector.psycopg import register_vector
    from sentence_transformers import SentenceTransformer

    from munjang.search.backends.postgres.dense import EF_SQL, MAX_EF_SEARCH
    from munjang.search.backends.postgres.segments import (
        Graph,
        ask_again,
        best_of,
        first_asks,
        graph_bounds,
        index_name,
        search_sql,
    )

    root, n, k = Path(args.folder), args.passages, args.k
    root.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(root / "pg", cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET shared_buffers = '6026MB'")  # a quarter of 24 GiB, as collection_scale
        conn.execute(f"ALTER SYSTEM SET maintenance_work_mem = '{args.maintenance_work_mem}'")
    server.cleanup()
    server = pgserver.get_server(root / "pg", cleanup_mode="stop")
    conn = psycopg.connect(server.get_uri(), autocommit=True)
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    register_vector(conn)
    folder = root / "encoder"
    model = SentenceTransformer(str(folder if folder.exists() else cheap_encoder(folder)), device="cpu")
    if conn.execute("SELECT to_regclass('documents')").fetchone()[0] is None:
        conn.execute("CREATE TABLE documents (label bigint PRIMARY KEY, embedding vector(64) NOT NULL)")
        pool = load_corpus(5000, seed=0, lang="ko")
        for start in range(0, n, 100_000):
            texts = passages(min(100_000, n - start), start, pool)
            vectors = model.encode(texts, batch_size=4096, normalize_embeddings=True).astype(np.float32)
            load = "COPY documents (label, embedding) FROM STDIN WITH (FORMAT BINARY)"
            with conn.cursor().copy(load) as copy:
                copy.set_types(["int8", "vector"])
                for i, vector in enumerate(vectors):
                    copy.write_row((start + i + 1, vector))
            print(f"loaded {start + len(texts):,}", flush=True)
        conn.execute("VACUUM ANALYZE documents")
    made = "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'documents_embedding%'"
    for (name,) in conn.execute(made).fetchall():
        conn.execute(f"DROP INDEX {name}")
    queries = load_corpus(2000, seed=11, lang="ko")[1000 : 1000 + args.queries]
    vectors = model.encode(queries, normalize_embeddings=True).astype(np.float32)
    exact = "SELECT label FROM documents ORDER BY (embedding <=> %s) + 0 LIMIT %s"
    truth = [[row[0] for row in conn.execute(exact, (vector, k))] for vector in vectors]
    builds: dict[str, float] = {}

    def build(graph: Graph | None) -> None:
        name = "documents_embedding_hnsw" if graph is None else index_name(graph)
        where = "" if graph is None else "WHERE label > {} AND label <= {}".format(*graph_bounds(graph, SIZE))
        started = time.perf_counter()
        method = f"hnsw (embedding vector_cosine_ops) {OPTIONS}"
        conn.execute(f"CREATE INDEX {name} ON documents USING {method} {where}")
        builds[name] = round(time.perf_counter() - started, 1)
        print(f"built {name}: {builds[name]} s", flush=True)

    def search(vector: np.ndarray, layout: list[Graph]) -> list[int]:
        asks = first_asks(k, layout, n, SIZE)
        walks: dict[int, list[int]] = {}
        for number, ask in enumerate(asks):
            walks.setdefault(min(max(64, ask), MAX_EF_SEARCH), []).append(number)
        rows: list[Any] = []
        with conn.transaction():
            for ef, numbers in sorted(walks.items()):
                conn.execute(EF_SQL, [str(ef)])
                sql = search_sql("documents", "<=>", "TRUE", layout, numbers, SIZE)
                rows += conn.execute(sql, [x for i in numbers for x in (vector, vector, asks[i])]).fetchall()
            best = best_of(rows, k)
            again = ask_again(rows, best, k, asks)
            if again:
                conn.execute(EF_SQL, [str(k)])
                sql = search_sql("documents", "<=>", "TRUE", layout, again, SIZE)
                kept = [row for row in rows if row[0] not in again]
                best = best_of(kept + conn.execute(sql, [vector, vector, k] * len(again)).fetchall(), k)
        return [label for label, _ in best]

    def one_graph(vector: np.ndarray, layout: list[Graph]) -> list[int]:
        with conn.transaction():
            conn.execute(EF_SQL, [str(k)])
            sql = "SELECT label FROM documents ORDER BY embedding <=> %s LIMIT %s"
            return [row[0] for row in conn.execute(sql, (vector, k))]

    def measure(fn: Any, layout: list[Graph]) -> dict[str, Any]:
        fn(vectors[0], layout)  # the plans and the pages once
        times, at10, at100 = [], [], []
        for turn in range(2):
            for vector, exact in zip(vectors, truth, strict=True):
                started = time.perf_counter()
                got = fn(vector, layout)
                times.append(time.perf_counter() - started)
                if turn == 0:
                    at10.append(len(set(got[:10]) & set(exact[:10])) / 10)
                    at100.append(len(set(got[:100]) & set(exact[:100])) / 100)
        size = conn.execute(
            "SELECT sum(pg_relation_size(indexrelid)) FROM pg_stat_user_indexes "
            "WHERE indexrelname LIKE 'documents_embedding%'"
        ).fetchone()[0]
        return {
            "graphs": [list(graph) for graph in layout] or "one, unpartitioned",
            "recall_at_10": round(float(np.mean(at10)), 4),
            "recall_at_100": round(float(np.mean(at100)), 4),
            "median_ms": round(statistics.median(times) * 1000, 1),
            "hnsw_indexes_mib_present": round(int(size) / 2**20, 1),
        }

    segments = [(number, 1) for number in range(-(-n // SIZE))]
    results: dict[str, Any] = {}
    for graph in segments:
        build(graph)
    layouts = {
        "segments_8": segments,
        "merged_4_plus_segments": [(0, 4), *segments[4:]],
        "merged_two_of_4": [(0, 4), (4, 4)],
    }
    for name, layout in layouts.items():
        for graph in layout:
            if index_name(graph) not in builds:
                build(graph)
        results[name] = measure(search, layout)
        print(name, results[name], flush=True)
    for graph in [*segments, (0, 4), (4, 4)]:
        conn.execute(f"DROP INDEX {index_name(graph)}")
    build(None)
    results["one_graph"] = measure(one_graph, [])
    print("one_graph", results["one_graph"], flush=True)
    conn.close()
    server.cleanup()
    payload = {
        "passages": n,
        "segment_size": SIZE,
        "k": k,
        "queries": len(queries),
        "maintenance_work_mem": args.maintenance_work_mem,
        "build_s": builds,
        "layouts": results,
    }
    print(f"wrote {write_result(args.name, payload, environment)}")


if __name__ == "__main__":
    main()
