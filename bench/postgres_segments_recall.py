"""What PostgreSQL HNSW segments find, and how fast, as each is first asked for its share of k.

On a collection kept by `bench/collection_scale.py --backend postgres --index hnsw --keep` (its
database folder is printed): Korean queries are encoded by the collection's encoder and searched for
the k passages a hybrid search over documents asks the dense side for (100 candidates, 4 passages
each), three ways: exactly (the truth), with every segment asked for all k and walked at `ef_search`
k (what munjang did before first asks), and as munjang searches now (each segment asked for its
share plus Lucene's margin, `postgres_segments.first_asks`), at each `--expansion-search`. For each:
the share of the exact best 10 and best 100 found, and the median time of one search.

    python bench/collection_scale.py --backend postgres --index hnsw --batch 100000 --batches 10 --keep
    python bench/postgres_segments_recall.py --database /tmp/munjang-scale-XXXX/pg
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

from common import load_corpus, print_environment, write_result


def found(got: list[int], truth: list[int], n: int) -> float:
    """The share of the exact best n among the first n found."""
    return len(set(got[:n]) & set(truth[:n])) / n


def measure(search: Any, vectors: np.ndarray, truth: list[list[int]]) -> dict[str, float]:
    """Recall at 10 and 100 against the truth, and the median milliseconds of one search."""
    search(vectors[0])  # the plan and the pages once
    times, at10, at100 = [], [], []
    for vector, exact in zip(vectors, truth, strict=True):
        started = time.perf_counter()
        got = search(vector)
        times.append(time.perf_counter() - started)
        at10.append(found(got, exact, 10))
        at100.append(found(got, exact, 100))
    return {
        "recall_at_10": round(float(np.mean(at10)), 4),
        "recall_at_100": round(float(np.mean(at100)), 4),
        "median_ms": round(statistics.median(times) * 1000, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="the kept collection's pgserver folder")
    parser.add_argument("--collection", default="scale")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--k", type=int, default=400, help="passages asked of the dense side")
    parser.add_argument("--expansion-search", type=int, nargs="+", default=[64, 100, 128, 200])
    parser.add_argument("--name", default="postgres_segments_recall")
    args = parser.parse_args(argv)
    environment = print_environment()
    import pgserver

    from munjang.search import Collection
    from munjang.search.backends.postgres.dense import MAX_EF_SEARCH, PostgresDense
    from munjang.search.backends.postgres.segments import graphs

    server = pgserver.get_server(args.database, cleanup_mode="stop")
    collection = Collection.open(args.collection, backend=server.get_uri(), readonly=True)
    store, meta, k = collection.store, collection.store.get_meta(), args.k
    queries = load_corpus(2000, seed=11, lang="ko")[1000 : 1000 + args.queries]
    vectors = np.asarray(collection.query_encoder.encode(queries), dtype=np.float32)

    def labels(dense: PostgresDense, vector: np.ndarray) -> list[int]:
        return [int(x) for x in dense.search(store, vector[None], k, None)[0][0] if x >= 0]

    exact = PostgresDense(store, {**meta, "index": "exact"})
    truth = [labels(exact, vector) for vector in vectors]
    size, segments = int(meta["hnsw_segment_size"]), int(meta["hnsw_segments"])
    layout = graphs([tuple(graph) for graph in meta.get("hnsw_merged") or []], segments)
    own = PostgresDense(store, meta)

    def every_segment_all_k(vector: np.ndarray) -> list[int]:
        # Before first asks: each segment asked for all k, walked at max(expansion_search, k).
        with store.snapshot():
            walk = str(min(max(own.ef_search, k), MAX_EF_SEARCH))
            store.conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", [walk])
            hits = own._segmented(vector, k, layout, [k] * len(layout), "TRUE", [], size)
        return [label for label, _ in hits]

    before = measure(every_segment_all_k, vectors, truth)
    print("every segment asked for all k:", before, flush=True)
    now: dict[str, Any] = {}
    for ef in args.expansion_search:
        dense = PostgresDense(store, {**meta, "hnsw": {**(meta.get("hnsw") or {}), "expansion_search": ef}})
        now[str(ef)] = measure(lambda vector, dense=dense: labels(dense, vector), vectors, truth)
        print(f"first asks, expansion_search {ef}:", now[str(ef)], flush=True)
    passages = store.passage_count()
    collection.close()
    server.cleanup()
    payload = {
        "passages": passages,
        "segments": segments,
        "graphs": layout,
        "segment_size": size,
        "expansion_search_of_the_collection": own.ef_search,
        "k": k,
        "queries": len(queries),
        "every_segment_all_k": before,
        "first_asks_by_expansion_search": now,
    }
    print(f"wrote {write_result(args.name, payload, environment)}")


if __name__ == "__main__":
    main()
