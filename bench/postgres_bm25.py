"""BM25 in PostgreSQL: a query's postings summed per text by a merge or by a hash, side by side.

On a collection kept by `bench/collection_scale.py --backend postgres --keep` (its database folder is
printed), Korean queries (KorSTS sentences the collection's passages are not made of, tokenized by
the collection's tokenizer) are searched for the best k passages through `PostgresLexical` (each
term's postings scanned in text order, the scans merged and each text's score summed as its rows
pass: a merge append and a group aggregate) and through the statement munjang ran before (the terms
joined with their postings and summed in a hash table by text): each query once both ways untimed
(its pages read, its plans made), then in alternating rounds. For each: the median, 90th
percentile and worst milliseconds of one search, the number of postings a query reads, and the
memory the median and the heaviest query's run took in the database (its plan's hash tables and
sorts, in memory and spilled); the two must return the same passages with the same scores.

    python bench/collection_scale.py --backend postgres --index hnsw --batch 100000 --batches 10 --keep
    python bench/postgres_bm25.py --database /tmp/munjang-scale-XXXX/pg
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load_corpus, print_environment, write_result


def hashed_sql(lexical: Any) -> str:
    """The unfiltered search statement munjang ran before merged scans (parameters: terms, their
    query counts, k, k): every term joined with its postings, summed by a hash of the text."""
    return (
        f"{lexical._weights}scored AS (SELECT p.text_id, sum(q.w * {lexical._tfc}) AS score FROM q "
        f'JOIN {lexical._postings} p ON p.term = q.term COLLATE "C" GROUP BY p.text_id) '
        "SELECT d.label, x.score FROM (SELECT text_id, score FROM scored "
        f"ORDER BY score DESC, text_id LIMIT %s) x {lexical._passages}ORDER BY x.score DESC, d.label LIMIT %s"
    )


def query_memory(conn: Any, sql: str, params: list[Any]) -> dict[str, int]:
    """The memory one run of a statement took in its PostgreSQL backend, from its plan's counters
    (`EXPLAIN ANALYZE`, kB): the hash tables' and sorts' peak in memory, and what they spilled."""
    plan = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params).fetchone()[0][0]["Plan"]
    memory = disk = 0
    nodes = [plan]
    while nodes:
        node = nodes.pop()
        nodes += node.get("Plans", [])
        memory += int(node.get("Peak Memory Usage", 0))
        disk += int(node.get("Disk Usage", 0))
        if "Sort Space Used" in node:
            space = int(node["Sort Space Used"])
            memory, disk = (
                (memory + space, disk) if node.get("Sort Space Type") == "Memory" else (memory, disk + space)
            )
    return {"in_memory": memory, "spilled_to_disk": disk}


def close(x: float, y: float) -> bool:
    """Equal up to float8 rounding (the two statements sum a text's terms in different orders)."""
    return abs(x - y) <= 1e-9 * max(1.0, abs(y))


def same_up_to_rounding(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> bool:
    """Assert that two searches found the same passages with the same scores, up to rounding: a
    passage only one of them holds must tie, up to rounding, with the last score of both (texts
    with equal scores that rounding told apart). True when such a tie was cut differently."""
    assert len(a) == len(b), "different numbers of passages"
    scores_a, scores_b = dict(a), dict(b)
    for label in scores_a.keys() & scores_b.keys():
        assert close(scores_a[label], scores_b[label]), f"passage {label}: different scores"
    only = [scores_a[x] for x in scores_a.keys() - scores_b.keys()] + [
        scores_b[x] for x in scores_b.keys() - scores_a.keys()
    ]
    assert all(close(score, a[-1][1]) and close(score, b[-1][1]) for score in only), "different passages"
    return bool(only)


def spread(values: list[float], scale: float = 1.0) -> dict[str, float]:
    """Median, 90th percentile (the nearest rank below) and worst of `values`, times `scale`."""
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered) * scale, 1),
        "p90": round(ordered[int(0.9 * (len(ordered) - 1))] * scale, 1),
        "max": round(ordered[-1] * scale, 1),
    }


def summary(times: list[float]) -> dict[str, float]:
    """`spread` of search times, in milliseconds."""
    return {f"{key}_ms": value for key, value in spread(times, 1000).items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="the kept collection's pgserver folder")
    parser.add_argument("--collection", default="scale")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--k", type=int, nargs="+", default=[10, 400])
    parser.add_argument("--name", default="postgres_bm25")
    args = parser.parse_args(argv)
    environment = print_environment()
    import pgserver

    from munjang.search import Collection
    from munjang.search.index.tokenizers import tokenizer_from_config

    server = pgserver.get_server(args.database, cleanup_mode="stop")
    collection = Collection.open(args.collection, backend=server.get_uri(), readonly=True)
    lexical, store = collection.lexical, collection.store
    tokenizer = tokenizer_from_config(store.get_meta()["lexical"]["tokenizer"])
    queries = [tokenizer(q) for q in load_corpus(2000, seed=11, lang="ko")[1000 : 1000 + args.queries]]
    queries = [q for q in queries if q]
    postings = []
    for tokens in queries:
        row = store.conn.execute(
            f"SELECT coalesce(sum(df), 0) FROM {store.t('lexical_terms')} WHERE term = ANY(%s)",
            [list(set(tokens))],
        ).fetchone()
        postings.append(int(row[0]))
    old = hashed_sql(lexical)
    order = sorted(range(len(queries)), key=postings.__getitem__)  # queries by postings read

    def hashed(tokens: list[str], k: int) -> list[tuple[int, float]]:
        counts = Counter(tokens)
        rows = store.conn.execute(old, [list(counts), [float(c) for c in counts.values()], k, k]).fetchall()
        return [(int(label), float(score)) for label, score in rows]

    def merged(tokens: list[str], k: int) -> list[tuple[int, float]]:
        return lexical.search([tokens], k)[0]

    def statements(tokens: list[str], k: int) -> dict[str, tuple[str, list[Any]]]:
        counts = Counter(tokens)
        params: list[Any] = [list(counts), [float(c) for c in counts.values()]]
        return {
            "merged": (lexical.statement(len(counts), None), [*params, *counts, k, k]),
            "hashed": (old, [*params, k, k]),
        }

    results: dict[str, Any] = {}
    for k in args.k:
        times: dict[str, list[float]] = {"merged": [], "hashed": []}
        ways = (("merged", merged), ("hashed", hashed))
        for tokens in queries:  # every query's pages read and plans made once, both ways, untimed
            merged(tokens, k), hashed(tokens, k)
        for turn in range(args.rounds):  # alternating which goes first
            for name, search in ways if turn % 2 == 0 else ways[::-1]:
                for tokens in queries:
                    started = time.perf_counter()
                    search(tokens, k)
                    times[name].append(time.perf_counter() - started)
        swapped = 0
        for tokens in queries:
            swapped += same_up_to_rounding(merged(tokens, k), hashed(tokens, k))
        results[str(k)] = {name: summary(ts) for name, ts in times.items()}
        for label, at in (("median", order[len(order) // 2]), ("heaviest", order[-1])):
            for name, (sql, params) in statements(queries[at], k).items():
                results[str(k)][name][f"{label}_query_memory_kib"] = query_memory(store.conn, sql, params)
        results[str(k)]["queries_with_ties_swapped_at_k"] = swapped
        results[str(k)]["median_ratio_hashed_over_merged"] = round(
            results[str(k)]["hashed"]["median_ms"] / results[str(k)]["merged"]["median_ms"], 2
        )
        print(f"k {k}:", results[str(k)], flush=True)
    passages = store.passage_count()
    collection.close()
    server.cleanup()
    payload = {
        "passages": passages,
        "queries": len(queries),
        "rounds": args.rounds,
        "postings_per_query": spread([float(n) for n in postings]),
        "by_k": results,
    }
    print(f"wrote {write_result(args.name, payload, environment)}")


if __name__ == "__main__":
    main()
