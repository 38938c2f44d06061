"""PostgreSQL's postings read by index alone or not: BM25 and SPLADE query time right after the writes.

The same synthetic passages (Zipf-distributed BM25 tokens and SPLADE vectors, written through
`PostgresStore` as a collection writes them) go into two collections on one pgserver; in one the
commits vacuum the postings tables (what munjang does), in the other they wait for autovacuum (what
it did before). Until a table's pages are all-visible, an index-only scan of the postings visits the
table for every posting, so each query term costs a heap page per posting. Query times are taken in
the same run, right after the last commit, alternating between the two.

    python bench/postgres_postings.py --passages 20000 --name postgres_postings-20k
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result

VOCAB = 30_000
PER_COMMIT = 1_000


def fill(store: Any, n: int, seed: int) -> float:
    """Write n passages (BM25 tokens and SPLADE vectors) in commits of PER_COMMIT; seconds spent."""
    from munjang.search.backends.base import NewRow, sparse_cache_key

    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, VOCAB + 1) ** 0.8
    zipf /= zipf.sum()
    spent = 0.0
    for start in range(0, n, PER_COMMIT):
        rows, vectors = [], []
        for i in range(start, min(n, start + PER_COMMIT)):
            words = rng.choice(VOCAB, size=20, p=zipf)
            tokens = json.dumps([f"w{w}" for w in words])
            rows.append(NewRow(f"d{i}", "text", json.dumps({"group": i % 10}), f"h{i}", tokens))
            ids = np.unique(rng.choice(VOCAB, size=150, p=zipf))
            vectors.append((ids, rng.random(len(ids)).astype(np.float32)))
        began = time.perf_counter()
        with store.transaction():
            hashes = [r.text_hash for r in rows]
            store.put_embeddings("m", hashes, np.ones((len(rows), 4), np.float32))
            store.put_sparse(sparse_cache_key("s"), hashes, vectors)
            store.insert(rows, "m")
        spent += time.perf_counter() - began
    return spent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--name", default="postgres_postings")
    args = parser.parse_args(argv)
    environment = print_environment()
    import pgserver

    from munjang.search.backends.base import sparse_cache_key
    from munjang.search.backends.postgres.lexical import PostgresLexical
    from munjang.search.backends.postgres.sparse import PostgresSparse
    from munjang.search.backends.postgres.store import PostgresStore

    server = pgserver.get_server(Path(tempfile.mkdtemp(prefix="munjang-postings-")), cleanup_mode="stop")
    try:
        url = server.get_uri()
        config = {"dim": 4, "metric": "cosine", "index": "exact", "sparse": {"model": "s", "dim": VOCAB}}
        stores, write_s = {}, {}
        for kind in ("vacuumed", "autovacuum only"):
            store = PostgresStore(url, kind.split()[0])
            store.drop()
            store.create_schema(config)
            store.conn.execute(f"ALTER TABLE {store.t('lexical_postings')} SET (autovacuum_enabled = off)")
            store.conn.execute(f"ALTER TABLE {store.t('sparse_postings')} SET (autovacuum_enabled = off)")
            if kind != "vacuumed":
                store.vacuum_postings = lambda: None  # type: ignore[method-assign]
            write_s[kind] = fill(store, args.passages, seed=0)
            stores[kind] = store
        rng = np.random.default_rng(1)
        sparse_queries = [
            (ids, np.ones(len(ids)))
            for ids in (np.unique(rng.integers(0, 200, 30)) for _ in range(args.queries))
        ]
        lexical_queries = [[f"w{w}" for w in rng.integers(0, 300, 4)] for _ in range(args.queries)]
        timings: dict[str, dict[str, float]] = {kind: {"sparse": 0.0, "lexical": 0.0} for kind in stores}
        answers: dict[str, list[Any]] = {kind: [] for kind in stores}
        for q in range(args.queries):
            for kind, store in stores.items():
                sparse = PostgresSparse(store, sparse_cache_key("s"))
                lexical = PostgresLexical(store, {"method": "lucene"})
                began = time.perf_counter()
                answers[kind] += sparse.search_where(sparse_queries[q : q + 1], 10, None)
                timings[kind]["sparse"] += time.perf_counter() - began
                began = time.perf_counter()
                answers[kind] += lexical.search_where(lexical_queries[q : q + 1], 10, None)
                timings[kind]["lexical"] += time.perf_counter() - began
        vacuumed, waiting = answers["vacuumed"], answers["autovacuum only"]
        same = all(
            [label for label, _ in a] == [label for label, _ in b]
            and np.allclose([s for _, s in a], [s for _, s in b], rtol=1e-9)
            for a, b in zip(vacuumed, waiting, strict=True)
        )
        rows = {
            kind: {
                "write_passages_per_s": round(args.passages / write_s[kind], 1),
                "sparse_ms_per_query": round(timings[kind]["sparse"] / args.queries * 1000, 1),
                "lexical_ms_per_query": round(timings[kind]["lexical"] / args.queries * 1000, 1),
            }
            for kind in stores
        }
        for kind, row in rows.items():
            print(kind, row, flush=True)
        payload = {
            "passages": args.passages,
            "queries": args.queries,
            "rows": rows,
            "same_results": same,
            "query_speedup": {
                mode: round(
                    rows["autovacuum only"][f"{mode}_ms_per_query"]
                    / rows["vacuumed"][f"{mode}_ms_per_query"],
                    2,
                )
                for mode in ("sparse", "lexical")
            },
            "write_ratio": round(
                rows["vacuumed"]["write_passages_per_s"] / rows["autovacuum only"]["write_passages_per_s"], 2
            ),
        }
        print(payload)
        for store in stores.values():
            store.drop()
            store.close()
    finally:
        server.cleanup()
    print(f"wrote {write_result(args.name, payload, environment)}")


if __name__ == "__main__":
    main()
