"""Multi-vector index: PLAID-style centroids vs MUVERA fixed-dimensional encodings, against brute force.

    python bench/multi_vector_index.py            # 100k synthetic documents (tens of minutes on 2 busy cores)
    python bench/multi_vector_index.py --docs 20000 --queries 100

Synthetic token sets that resemble real ones: 4,096 unit "topic" directions; a document draws 3
topics and each of its 32 tokens is one of them plus noise, renormalised (128-d, stored float16); a
query (16 tokens) is built the same way from 2 topics of a random document, so every query has
relevant documents and many near-misses. Ground truth: exact MaxSim over all documents. Reported per
index and setting: recall@10 against that ground truth, milliseconds per query (one query at a
time), bytes per document and build seconds. JSON to bench/results/multi_vector_index.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result
from munjang.encoders.multi_vector.flat import FlatTokens, brute_force_top_k
from munjang.search.index.muvera import MuveraIndex
from munjang.search.index.plaid import PlaidIndex


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def synthetic(
    n_docs: int, n_queries: int, doc_tokens: int, query_tokens: int, dim: int, seed: int = 0
) -> tuple[FlatTokens, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    topics = unit(rng.standard_normal((4096, dim))).astype(np.float32)
    noise = 0.9 / np.sqrt(dim)
    doc_topics = rng.integers(len(topics), size=(n_docs, 3))
    vectors = np.empty((n_docs * doc_tokens, dim), np.float16)
    for start in range(0, n_docs, 10_000):
        end = min(start + 10_000, n_docs)
        pick = doc_topics[start:end][
            np.arange(end - start)[:, None], rng.integers(3, size=(end - start, doc_tokens))
        ]
        tokens = topics[pick] + noise * rng.standard_normal((end - start, doc_tokens, dim)).astype(np.float32)
        vectors[start * doc_tokens : end * doc_tokens] = unit(tokens).reshape(-1, dim)
    offsets = np.arange(n_docs + 1, dtype=np.int64) * doc_tokens
    queries = []
    for d in rng.integers(n_docs, size=n_queries):
        chosen = rng.choice(doc_topics[d], size=2, replace=False)
        tokens = topics[chosen[rng.integers(2, size=query_tokens)]]
        queries.append(unit(tokens + noise * rng.standard_normal((query_tokens, dim))).astype(np.float32))
    return FlatTokens(vectors, offsets), queries


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth, strict=True)]))


def run(index: Any, store: FlatTokens, queries: list[np.ndarray], truth: np.ndarray, settings: list) -> list:
    start = time.perf_counter()
    index.build(store)
    build = time.perf_counter() - start
    rows = []
    for name, value in settings:
        setattr(index, name, value)
        start = time.perf_counter()
        found = [index.search([q], 10)[0][0] for q in queries]
        ms = 1000 * (time.perf_counter() - start) / len(queries)
        row = {
            "index": type(index).__name__,
            name: value,
            "recall@10": round(recall(np.array(found), truth), 4),
            "ms_per_query": round(ms, 2),
            "bytes_per_doc": round(index.memory_bytes() / len(store), 1),
            "build_s": round(build, 1),
        }
        print(row, flush=True)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--doc-tokens", type=int, default=32)
    parser.add_argument("--query-tokens", type=int, default=16)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--centroids", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--name", default="multi_vector_index")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    env = print_environment()
    start = time.perf_counter()
    store, queries = synthetic(args.docs, args.queries, args.doc_tokens, args.query_tokens, args.dim)
    print(f"data: {len(store)} documents, {len(store.vectors)} tokens ({time.perf_counter() - start:.1f} s)")
    start = time.perf_counter()
    truth, _ = brute_force_top_k(queries, store, 10)
    brute_ms = 1000 * (time.perf_counter() - start) / len(queries)
    print(f"brute force: {brute_ms:.1f} ms per query (all queries in one pass)", flush=True)
    rows = run(
        PlaidIndex(n_centroids=args.centroids),
        store,
        queries,
        truth,
        [("nprobe", 2), ("nprobe", 4), ("nprobe", 8)],
    )
    rows += run(MuveraIndex(), store, queries, truth, [("rerank", 128), ("rerank", 512), ("rerank", 2048)])
    passing = [r for r in rows if r["recall@10"] >= 0.95]
    fastest = min(passing, key=lambda r: r["ms_per_query"]) if passing else None
    smallest = min(passing, key=lambda r: (r["bytes_per_doc"], r["ms_per_query"])) if passing else None
    print("fastest setting with recall@10 >= 0.95:", fastest)
    print("smallest setting with recall@10 >= 0.95:", smallest)
    payload = {
        "data": {
            "documents": args.docs,
            "queries": args.queries,
            "doc_tokens": args.doc_tokens,
            "query_tokens": args.query_tokens,
            "dim": args.dim,
            "storage": "float16 tokens",
        },
        "brute_force_ms_per_query": round(brute_ms, 1),
        "brute_force_bytes_per_doc": round((store.vectors.nbytes + store.offsets.nbytes) / len(store), 1),
        "rows": rows,
        "fastest_passing": fastest,
        "smallest_passing": smallest,
    }
    print(write_result(args.name, payload, env))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
