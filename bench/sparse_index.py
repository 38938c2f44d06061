"""The collection's sparse (SPLADE) inverted index at scale: query latency and memory at 100k
synthetic documents, against brute force over the same vectors.

No trained SPLADE weights are available offline, so retrieval quality cannot be measured here; this
measures the index alone. Documents have ~100 active vocabulary entries each (token ids drawn
Zipf-like over a 30,522-entry vocabulary, as BERT's WordPiece ids are in text), weights log-normal.
Two query shapes: inference-free (8 distinct tokens, one weight each, as a SparseStaticEmbedding
gives) and SPLADE-expanded (32 active entries). Measured:

- build: `SparseIndex.add` of everything at once, and in batches of 1,000 (as a collection adds),
  which exercises segment merging;
- memory: the index's arrays (`memory_bytes`) and the process's resident-set growth;
- latency: one query at a time (median, p95) and batches of 100 (per query), top-10;
- brute force: the forward matrix (documents x vocabulary, CSR) times the query, scoring every
  document; its top-10 must equal the index's (checked on every query).

    python bench/sparse_index.py                # 100k documents (a few minutes on 2 cores)
    python bench/sparse_index.py --n 10000      # a smoke run
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from common import print_environment, rss_bytes, write_result
from munjang.search.index.sparse_index import SparseIndex, rows_to_csr

VOCAB = 30_522


def make_rows(
    rng: np.random.Generator, n: int, active: int, exponent: float, token_of_rank: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """`n` rows of about `active` distinct token ids, frequent ids (low ranks) far more likely (Zipf),
    rank r being token `token_of_rank[r]` (documents and queries share it); weights log-normal."""
    p = np.arange(1, VOCAB + 1, dtype=np.float64) ** -exponent
    cdf = np.cumsum(p / p.sum())
    draws = token_of_rank[np.minimum(np.searchsorted(cdf, rng.random((n, 3 * active))), VOCAB - 1)]
    rows = []
    for row in draws:
        ids = np.sort(np.array(list(dict.fromkeys(row.tolist()))[:active], dtype=np.int64))
        rows.append((ids, rng.lognormal(0.0, 0.6, len(ids)).astype(np.float32)))
    return rows


def top_k_brute(
    forward: sp.csr_matrix, labels: np.ndarray, query: sp.csr_matrix, k: int
) -> list[tuple[int, float]]:
    scores = np.asarray((forward @ query.T).todense()).ravel()
    hit = np.flatnonzero(scores)
    top = hit[np.argpartition(-scores[hit], min(k, len(hit)) - 1)[:k]] if len(hit) > k else hit
    order = np.lexsort((labels[top], -scores[top]))
    return [(int(labels[top[i]]), float(scores[top[i]])) for i in order]


def timed(fn: Any, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def summary(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "median_ms": round(statistics.median(ms), 3),
        "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 3),
        "mean_ms": round(statistics.fmean(ms), 3),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="documents (default 100000)")
    parser.add_argument("--active", type=int, default=100, help="active entries per document")
    parser.add_argument("--exponent", type=float, default=1.0, help="Zipf exponent of token ids")
    parser.add_argument("--queries", type=int, default=200, help="queries timed one at a time, per shape")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="sparse_index")
    args = parser.parse_args(argv)
    env = print_environment()
    rng = np.random.default_rng(args.seed)

    start = time.perf_counter()
    token_of_rank = rng.permutation(VOCAB)
    rows = make_rows(rng, args.n, args.active, args.exponent, token_of_rank)
    labels = np.arange(1, args.n + 1, dtype=np.int64)
    print(f"generated {args.n:,} documents in {time.perf_counter() - start:.1f} s")
    nnz = sum(len(ids) for ids, _ in rows)

    gc.collect()
    before = rss_bytes()
    start = time.perf_counter()
    index = SparseIndex(VOCAB)
    index.add(labels, rows)
    build_once = time.perf_counter() - start
    grown = rss_bytes() - before
    incremental = SparseIndex(VOCAB)
    start = time.perf_counter()
    for i in range(0, args.n, 1000):
        incremental.add(labels[i : i + 1000], rows[i : i + 1000])
    build_batches = time.perf_counter() - start
    forward = rows_to_csr(rows, VOCAB)
    forward_bytes = int(forward.data.nbytes + forward.indices.nbytes + forward.indptr.nbytes)
    print(f"build: {build_once:.2f} s at once, {build_batches:.2f} s in batches of 1000 "
          f"({len(incremental.segments)} segments left)")  # fmt: skip

    shapes = {"inference_free_8": (8, 1.0), "splade_32": (32, args.exponent)}
    results: dict[str, Any] = {}
    for shape, (active, exponent) in shapes.items():
        queries = make_rows(rng, args.queries, active, exponent, token_of_rank)
        if shape.startswith("inference_free"):
            queries = [(ids, np.ones(len(ids), np.float32)) for ids, _ in queries]
        matrices = [rows_to_csr([q], VOCAB) for q in queries]
        for m in matrices:  # the index and brute force agree
            got = index.search(m, args.k)[0]
            want = top_k_brute(forward, labels, m, args.k)
            assert [x for x, _ in got] == [x for x, _ in want], shape
            np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-4)
            assert incremental.search(m, args.k)[0] == got
        index_one = [timed(lambda m=m: index.search(m, args.k), 1)[0] for m in matrices]
        brute_one = [timed(lambda m=m: top_k_brute(forward, labels, m, args.k), 1)[0] for m in matrices]
        batch = rows_to_csr(queries[:100], VOCAB)
        index_batch = timed(lambda batch=batch: index.search(batch, args.k), 5)
        postings = [int(np.diff(index.segments[0].postings.indptr)[ids].sum()) for ids, _ in queries]
        results[shape] = {
            "query_active_entries": active,
            "postings_touched_mean": round(statistics.fmean(postings)),
            "index_batch1": summary(index_one),
            "brute_force_batch1": summary(brute_one),
            "index_batch100_per_query_ms": round(statistics.median(index_batch) * 1000 / 100, 3),
            "speedup_median": round(statistics.median(brute_one) / statistics.median(index_one), 1),
        }
        print(f"{shape}: index {results[shape]['index_batch1']['median_ms']} ms, brute force "
              f"{results[shape]['brute_force_batch1']['median_ms']} ms (median, batch 1)")  # fmt: skip

    write_result(
        args.name,
        {
            "documents": args.n,
            "vocabulary": VOCAB,
            "active_per_document": args.active,
            "zipf_exponent": args.exponent,
            "non_zeros": nnz,
            "k": args.k,
            "build_s": {"at_once": round(build_once, 2), "batches_of_1000": round(build_batches, 2)},
            "memory_bytes": {
                "index_arrays": index.memory_bytes(),
                "rss_growth_build": grown,
                "forward_matrix_arrays": forward_bytes,
            },
            "queries": results,
        },
        env,
    )


if __name__ == "__main__":
    main()
