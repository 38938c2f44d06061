"""A large PostgreSQL collection's first searches after a commit, through `Collection`, under two
rules for how many passages a search over documents fetches per document wanted: 4 always (before)
and by the share of passages that are documents' later passages (`search.passages_to_fetch`, now).

On a collection kept by `bench/collection_scale.py --backend postgres --index hnsw --keep` (its
database folder is printed; this bench adds passages to it): rounds of an add of `--batch` Korean
passages (the cheap encoder, Kiwi tokens, BM25 postings, the commit, the postings vacuumed), then the
writer's first lexical and first hybrid search, then every query once more (what a server pays after
each write and once the write is behind). The rules take turns round by round, so both meet the
same collection, sizes and machine; ratios are before / now. The collection_scale run keeps 283 of its
1,000,000 documents as several passages, as a corpus of short texts with a few long ones does.

    sysctl vm.nr_hugepages=3300   # the kept run used huge pages
    python bench/collection_scale.py --backend postgres --index hnsw --huge-pages --batch 100000 \
        --batches 10 --keep
    python bench/collection_after_commit.py --database /tmp/munjang-scale-XXXX/pg
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from collection_scale import QUERIES, background_work, passages, peak_rss_kib, timed
from common import load_corpus, print_environment, rss_bytes, write_result

RULES = ("4 per document", "by share")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True, help="the kept collection's pgserver folder")
    parser.add_argument("--collection", default="scale")
    parser.add_argument("--batch", type=int, default=10_000, help="passages added per round")
    parser.add_argument("--rounds", type=int, default=6, help="rounds in all, the rules taking turns")
    parser.add_argument("--name", default="collection_after_commit")
    args = parser.parse_args(argv)
    environment = print_environment()
    import pgserver
    import psycopg

    import munjang.search.collection.search as search
    from munjang.search import Collection

    share = search.FULL_FETCH_SHARE
    server = pgserver.get_server(args.database, cleanup_mode="stop")
    url = server.get_uri()
    collection = Collection.open(args.collection, backend=url)
    collection.warm_up()
    for query in QUERIES:  # the plans made, the pages read once
        collection.search(query, 10, mode="hybrid")
    monitor = psycopg.connect(url, autocommit=True)
    pool = load_corpus(5000, seed=0, lang="ko")
    asked: list[int] = []
    retrieve = type(collection.searcher)._retrieve

    def spied(self: Any, name: str, queries: list[str], k: int, *rest: Any, **kwargs: Any) -> Any:
        if name == "dense":
            asked.append(k)
        return retrieve(self, name, queries, k, *rest, **kwargs)

    type(collection.searcher)._retrieve = spied  # type: ignore[method-assign]
    first = collection.store.watermark().label + 1
    rows = []
    for turn in range(args.rounds):
        rule = RULES[turn % 2]
        search.FULL_FETCH_SHARE = 1e-12 if rule == RULES[0] else share
        start = first + turn * args.batch
        ids = [f"after-commit-{start + i}" for i in range(args.batch)]
        add_s = timed(collection.add, ids, passages(args.batch, start, pool), show_progress_bar=False)
        busy = background_work(monitor)
        lexical_s = timed(collection.search, QUERIES[1 + turn % 3], 10, mode="lexical")
        asked.clear()
        hybrid_s = timed(collection.search, QUERIES[turn % 4], 10, mode="hybrid")
        fetched = asked[0]
        busy += background_work(monitor)
        again = sorted(timed(collection.search, query, 10, mode="hybrid") for query in QUERIES)
        counts = collection.store.counts()
        row = {
            "rule": rule,
            "passages": None if counts is None else counts.passages,
            "documents": None if counts is None else counts.documents,
            "dense_passages_fetched": fetched,
            "add_passages_per_s": round(args.batch / add_s, 1),
            "first_lexical_after_commit_s": lexical_s,
            "first_hybrid_after_commit_s": hybrid_s,
            "next_hybrid_s": {"median": round((again[1] + again[2]) / 2, 4), "max": again[-1]},
            "database_background_work": busy,
            "writer_rss_mib": round(rss_bytes() / 2**20, 1),
        }
        rows.append(row)
        print(row, flush=True)
    search.FULL_FETCH_SHARE = share
    summary: dict[str, Any] = {}
    for rule in RULES:
        mine = [row for row in rows if row["rule"] == rule]

        def median(key: str, rows: list[dict[str, Any]] = mine) -> float:
            return round(statistics.median(r[key] for r in rows), 4)

        summary[rule] = {
            "first_hybrid_median_s": median("first_hybrid_after_commit_s"),
            "first_hybrid_max_s": max(r["first_hybrid_after_commit_s"] for r in mine),
            "next_hybrid_median_s": round(statistics.median(r["next_hybrid_s"]["median"] for r in mine), 4),
            "first_lexical_median_s": median("first_lexical_after_commit_s"),
        }
    before, now = summary[RULES[0]], summary[RULES[1]]

    def ratio(key: str) -> float:
        return round(before[key] / now[key], 2)

    payload = {
        "batch": args.batch,
        "rows": rows,
        "summary": summary,
        "first_hybrid_before_over_now": ratio("first_hybrid_median_s"),
        "next_hybrid_before_over_now": ratio("next_hybrid_median_s"),
        "writer_peak_rss_mib": round(peak_rss_kib() / 1024, 1),
    }
    print({k: v for k, v in payload.items() if k != "rows"})
    monitor.close()
    collection.close()
    server.cleanup()
    print(f"wrote {write_result(args.name, payload, environment)}")


if __name__ == "__main__":
    main()
