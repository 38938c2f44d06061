"""SPLADE in PostgreSQL: a query's postings summed per passage by a merge or by a hash, side by side.

Synthetic SPLADE passages (about 150 Zipf-distributed tokens of a 30,000-token vocabulary each, with
their BM25 tokens, written through `PostgresStore` in commits of 1,000 as a collection writes them:
`bench/postgres_postings.py`'s `fill`) go into one collection on a pgserver; `--database` reuses
one filled before. Three kinds of query vector (20 each, random weights): 30 tokens among the 200
commonest (a heavy, expanded query), 40 Zipf draws (a typical one), 30 tokens uniform over the
vocabulary (a light one). Each query is searched for the best k through `PostgresSparse` (each
token's postings scanned in passage order, the scans merged and each passage's score summed as its
rows pass) and through the statement munjang ran before (the tokens joined with their postings and
summed in a hash table by passage): each once both ways untimed, then in alternating rounds. For each:
the median and 90th percentile milliseconds, the postings a query reads, the memory the heaviest
query's run took in the database, and whether the two return the same passages.

    python bench/postgres_sparse_sum.py --passages 100000
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result
from postgres_bm25 import query_memory
from postgres_postings import VOCAB, fill

QUERIES = 20


def hashed_sql(sparse: Any) -> str:
    """The unfiltered statement munjang ran before merged scans (parameters: ids, weights, k)."""
    return (
        "WITH scored AS (SELECT p.label, sum(q.weight * p.weight) AS score "
        "FROM unnest(%s::int4[], %s::float8[]) AS q(term, weight) "
        f"JOIN {sparse._postings} p ON p.term = q.term GROUP BY p.label) "
        "SELECT label, score FROM scored WHERE score <> 0 ORDER BY 2 DESC, 1 LIMIT %s"
    )


def kinds(seed: int) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, VOCAB + 1) ** 0.8
    zipf /= zipf.sum()
    ids = {
        "heavy: 30 of the 200 commonest": [np.unique(rng.integers(0, 200, 30)) for _ in range(QUERIES)],
        "typical: 40 Zipf draws": [np.unique(rng.choice(VOCAB, 40, p=zipf)) for _ in range(QUERIES)],
        "light: 30 uniform": [np.unique(rng.integers(0, VOCAB, 30)) for _ in range(QUERIES)],
    }
    return {name: [(i, rng.random(len(i))) for i in group] for name, group in ids.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument(
        "--database", type=Path, default=None, help="a pgserver folder filled by a run before"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--k", type=int, nargs="+", default=[10, 400])
    parser.add_argument("--name", default="postgres_sparse_sum")
    args = parser.parse_args(argv)
    environment = print_environment()
    import pgserver

    from munjang.search.backends.base import sparse_cache_key
    from munjang.search.backends.postgres.sparse import PostgresSparse
    from munjang.search.backends.postgres.store import PostgresStore

    folder = args.database or Path(tempfile.mkdtemp(prefix="munjang-sparse-sum-"))
    server = pgserver.get_server(folder, cleanup_mode="stop")
    store = PostgresStore(server.get_uri(), "sparse")
    fill_s = None
    if args.database is None:
        store.create_schema(
            {"dim": 4, "metric": "cosine", "index": "exact", "sparse": {"model": "s", "dim": VOCAB}}
        )
        fill_s = round(fill(store, args.passages, seed=0), 1)
        print(f"filled {args.passages} passages in {fill_s} s", flush=True)
    sparse = PostgresSparse(store, sparse_cache_key("s"))
    old = hashed_sql(sparse)

    def merged(query: tuple[np.ndarray, np.ndarray], k: int) -> list[tuple[int, float]]:
        return sparse.search_where([query], k, None)[0]

    def hashed(query: tuple[np.ndarray, np.ndarray], k: int) -> list[tuple[int, float]]:
        rows = store.conn.execute(old, [query[0].tolist(), query[1].tolist(), k]).fetchall()
        return [(int(label), float(score)) for label, score in rows]

    postings_sql = f"SELECT count(*) FROM {store.t('sparse_postings')} WHERE term = ANY(%s)"
    results: dict[str, Any] = {}
    for kind, queries in kinds(1).items():
        postings = [int(store.conn.execute(postings_sql, [q[0].tolist()]).fetchone()[0]) for q in queries]
        heaviest = queries[int(np.argmax(postings))]
        results[kind] = {"postings_median": int(statistics.median(postings))}
        for k in args.k:
            for query in queries:  # pages read, plans made, both ways
                merged(query, k), hashed(query, k)
            times: dict[str, list[float]] = {"merged": [], "hashed": []}
            ways = (("merged", merged), ("hashed", hashed))
            for turn in range(args.rounds):
                for name, search in ways if turn % 2 == 0 else ways[::-1]:
                    for query in queries:
                        started = time.perf_counter()
                        search(query, k)
                        times[name].append(time.perf_counter() - started)
            same = sum(
                [label for label, _ in merged(q, k)] == [label for label, _ in hashed(q, k)] for q in queries
            )
            ids, weights = heaviest
            params = [x for pair in zip(weights.tolist(), ids.tolist(), strict=True) for x in pair]
            memory = {
                "merged": query_memory(store.conn, sparse.statement(len(ids), None), [*params, k]),
                "hashed": query_memory(store.conn, old, [ids.tolist(), weights.tolist(), k]),
            }
            row: dict[str, Any] = {
                name: {
                    "median_ms": round(statistics.median(ts) * 1000, 1),
                    "p90_ms": round(float(np.quantile(ts, 0.9)) * 1000, 1),
                    "heaviest_query_memory_kib": memory[name],
                }
                for name, ts in times.items()
            }
            row["median_ratio_hashed_over_merged"] = round(
                row["hashed"]["median_ms"] / row["merged"]["median_ms"], 2
            )
            row["queries_with_the_same_passages_in_order"] = f"{same} of {len(queries)}"
            results[kind][str(k)] = row
            print(kind, k, row, flush=True)
    passages = store.passage_count()
    store.close()
    server.cleanup()
    payload = {"passages": passages, "fill_s": fill_s, "queries_per_kind": QUERIES, "rounds": args.rounds}
    print(f"wrote {write_result(args.name, {**payload, 'kinds': results}, environment)}")


if __name__ == "__main__":
    main()
