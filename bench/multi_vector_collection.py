"""A collection's multi-vector retriever on Korean retrieval sets: add time, latency per query (exact
MaxSim and the PLAID path), memory per document, and quality beside dense and hybrid.

For each set, a sub-corpus (every document relevant to a seeded sample of queries, plus seeded
distractors) goes into a fresh folder collection with multilingual-e5-small as its dense model and a
ColBERT (default: the Korean ColBERT `bench/korean_colbert.py train` writes) as its multi-vector model. Then:

- add: seconds for `Collection.add` (dense vectors, token matrices and BM25 tokens, one transaction
  per 1,000 documents);
- memory: the token_vectors bytes per passage in the store, and the index's bytes per passage
  (float16 tokens; with PLAID built, its compressed copy on top);
- latency: `search(mode="multi_vector")` one query at a time (query encoding included), and the
  index alone on pre-encoded queries, exact and then with the exact limit set to 0 (PLAID over the
  whole sub-corpus), with PLAID's recall@10 against exact;
- quality: nDCG@10 and Recall@5 of dense, multi_vector and hybrid (dense + BM25 + multi-vector).

    python bench/multi_vector_collection.py [--sets question-pair,chatbot] [--corpus 800] [--queries 150]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result
from munjang._util.paths import cache_root
from munjang.evaluation.retrieval import evaluate_rankings_per_query
from munjang.search.collection.collection import Collection

DENSE = "multilingual-e5-small"


def default_colbert() -> Path:
    """bench/korean_colbert.py's trained model (run `python bench/korean_colbert.py train` first)."""
    return cache_root() / "bench" / "korean-colbert-e5-small"


def sample(data: Any, queries: int, corpus: int) -> tuple[list[str], list[str], dict[str, set[str]]]:
    """Seeded queries (with relevant documents) and a sub-corpus holding all their relevant documents."""
    qids = sorted(q for q in data.queries if data.qrels.get(q))
    qids = sorted(random.Random(0).sample(qids, min(queries, len(qids))))
    qrels = {q: set(data.qrels[q]) for q in qids}
    relevant = {d for docs in qrels.values() for d in docs}
    others = sorted(d for d in data.corpus if d not in relevant)
    extra = random.Random(1).sample(others, max(0, min(len(others), corpus - len(relevant))))
    return qids, [d for d in data.corpus if d in relevant or d in set(extra)], qrels


def quality(rankings: dict[str, list[str]], qrels: dict[str, set[str]]) -> dict[str, float]:
    per_query = evaluate_rankings_per_query(rankings, qrels, k_values=(5, 10))
    return {
        "ndcg@10": round(float(np.mean([m["ndcg@10"] for m in per_query.values()])), 4),
        "recall@5": round(float(np.mean([m["recall@5"] for m in per_query.values()])), 4),
    }


def timed_ms(fn: Any, items: list[Any]) -> tuple[list[Any], float, float]:
    """fn on each item alone: results, median and mean milliseconds."""
    out, times = [], []
    for item in items:
        start = time.perf_counter()
        out.append(fn(item))
        times.append(1000 * (time.perf_counter() - start))
    return out, round(float(np.median(times)), 2), round(float(np.mean(times)), 2)


def run_set(name: str, args: argparse.Namespace, encoder: Any, colbert: Any, work: Path) -> dict[str, Any]:
    import korean_retrieval as kr

    data = kr.LOADERS[name]()
    qids, ids, qrels = sample(data, args.queries, args.corpus)
    queries = [data.queries[q] for q in qids]
    col = Collection.create(
        work / name, DENSE, encoder=encoder, multi_vector_model=args.model, multi_vector_encoder=colbert
    )
    col.warm_up()  # Kiwi's model loads before the clock starts
    start = time.perf_counter()
    col.add(ids, [data.corpus[d] for d in ids], batch_size=32)
    add_s = time.perf_counter() - start
    assert col.check() == [], col.check()
    passages = col.store.passage_count()
    stored_bytes, stored_tokens = col.store.conn.execute(
        "SELECT sum(length(vectors)), sum(n_tokens) FROM token_vectors"
    ).fetchone()
    live = col.multi_vector.engine  # the folder's in-process token index
    live.sync(col.store)
    flat_bytes = live.index.memory_bytes()
    rankings = {}
    for mode in ("dense", "multi_vector", "hybrid"):
        hits = col.search(queries, k=10, mode=mode)
        rankings[mode] = {q: [h.id for h in row] for q, row in zip(qids, hits, strict=True)}
    _, search_median, search_mean = timed_ms(lambda q: col.search(q, k=10, mode="multi_vector"), queries)
    encoded = col.multi_vector.encode_queries(queries)
    exact, exact_median, exact_mean = timed_ms(
        lambda q: live.index.search([q], 10, mean=live_mean(col)), encoded
    )
    live.index.exact_limit = 0  # the PLAID path over the whole sub-corpus
    start = time.perf_counter()
    live.index.search(encoded[:1], 10)
    build_s = time.perf_counter() - start
    plaid, plaid_median, plaid_mean = timed_ms(
        lambda q: live.index.search([q], 10, mean=live_mean(col)), encoded
    )
    recall = np.mean(
        [
            len({x for x, _ in p[0]} & {x for x, _ in e[0]}) / max(1, len(e[0]))
            for p, e in zip(plaid, exact, strict=True)
        ]
    )
    result = {
        "corpus": len(ids),
        "passages": passages,
        "queries": len(queries),
        "add_s": round(add_s, 1),
        "add_docs_per_s": round(len(ids) / add_s, 1),
        "tokens_per_passage": round(stored_tokens / passages, 1),
        "store_token_bytes_per_passage": round(stored_bytes / passages, 1),
        "index_bytes_per_passage_exact": round(flat_bytes / passages, 1),
        "index_bytes_per_passage_with_plaid": round(live.index.memory_bytes() / passages, 1),
        "search_ms_per_query": {"median": search_median, "mean": search_mean},
        "index_exact_ms_per_query": {"median": exact_median, "mean": exact_mean},
        "index_plaid_ms_per_query": {"median": plaid_median, "mean": plaid_mean},
        "plaid_build_s": round(build_s, 2),
        "plaid_recall@10_vs_exact": round(float(recall), 4),
        **{mode: quality(r, qrels) for mode, r in rankings.items()},
    }
    col.close()
    return result


def live_mean(col: Collection) -> bool:
    return bool(col.multi_vector.mean)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="question-pair,chatbot")
    parser.add_argument("--corpus", type=int, default=800, help="documents per set (relevant + distractors)")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--model", type=Path, default=default_colbert(), help="the multi-vector model folder")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    import munjang
    from munjang.encoders.multi_vector import load_multi_vector_encoder

    torch.set_num_threads(args.threads)
    env = print_environment()
    encoder = munjang.load_encoder(DENSE, device="cpu")
    colbert = load_multi_vector_encoder(args.model, device="cpu")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets.split(","):
            print(f"== {name}", flush=True)
            results[name] = run_set(name, args, encoder, colbert, Path(tmp))
            print(results[name], flush=True)
    payload = {
        "dense_model": DENSE,
        "multi_vector_model": str(args.model.name),
        "settings": {"corpus": args.corpus, "queries": args.queries, "threads": args.threads},
        "results": results,
    }
    print(write_result("multi_vector_collection", payload, env))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
