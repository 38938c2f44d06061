"""Search at scale: exact vs HNSW vs binary/int8 quantized search on synthetic unit vectors (d=384).

For each corpus size and distribution (seeded; "uniform" random directions, the worst case for HNSW, and
"clustered", a Gaussian mixture around 2,048 centres, closer to real embeddings), with 1,000 queries drawn
separately from the same distribution:

- exact top-10: munjang.search.semantic_search (torch, chunked; dot and cosine) and a plain numpy
  matmul + argpartition, latency per query at batch 1 and batch 100;
- HNSW (munjang.search.index.ann.HNSWIndex, usearch): build time, memory, latency at batch 1 and 100 and
  recall@10 against exact search at several expansion_search values; the smallest one reaching the
  target recall (0.98) is reported as the setting to use;
- binary (BinaryIndex, 48 B/vector) and int8 (Int8Index, 384 B/vector): memory, latency and recall@10
  without rescoring and with float rescoring of rescore_multiplier * k candidates.

The float vectors used for rescoring are the in-memory corpus here (in a collection they would be a
memory-mapped file); they are not counted in the indexes' memory. The machine may be shared: compare
figures within one run.

    python bench/search_scale.py --sizes 100000        # both distributions -> results/search_scale-100k.json
    python bench/search_scale.py --sizes 1000000 --distributions clustered   # about an hour on 2 cores
    python bench/search_scale.py --sizes 1000000 --distributions uniform --parts exact,binary,int8 \
        --name search_scale-1m-uniform                  # HNSW on uniform data is hopeless at 100k already
    python bench/search_scale.py --sizes 1000000 --distributions clustered --parts binary \
        --multipliers 10,25,50,100 --name search_scale-1m-binary      # how many candidates binary needs
    python bench/search_scale.py --quick               # N=20000, 200 queries: a smoke run
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import rss_bytes

DIM = 384
DISTRIBUTIONS = ("uniform", "clustered")


def make_dataset(
    n: int,
    n_queries: int,
    dim: int = DIM,
    distribution: str = "clustered",
    seed: int = 0,
    centres: int = 2048,
    spread: float = 1.0,
    chunk: int = 100_000,
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded unit-norm float32 corpus (n, dim) and separate queries (n_queries, dim).

    "uniform": uniformly random directions (normalized Gaussians), the hardest case for HNSW because the
    data has no structure and all distances concentrate. "clustered": a Gaussian mixture around `centres`
    random unit centres, each point = centre + noise of norm about `spread`, then normalized; closer to
    real sentence embeddings. Queries come from the same distribution (same centres) but a separate
    random stream, so the corpus does not depend on `n_queries`.
    """
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}, not {distribution!r}")
    centre_seq, corpus_seq, query_seq = np.random.SeedSequence(seed).spawn(3)
    centre_vectors = None
    if distribution == "clustered":
        centre_vectors = _unit(np.random.default_rng(centre_seq).standard_normal((centres, dim), np.float32))
    sigma = np.float32(spread / np.sqrt(dim))

    def sample(count: int, seq: np.random.SeedSequence) -> np.ndarray:
        rng = np.random.default_rng(seq)
        out = np.empty((count, dim), dtype=np.float32)
        for start in range(0, count, chunk):
            stop = min(count, start + chunk)
            block = rng.standard_normal((stop - start, dim), dtype=np.float32)
            if centre_vectors is not None:
                block *= sigma
                block += centre_vectors[rng.integers(0, len(centre_vectors), stop - start)]
            out[start:stop] = _unit(block)
        return out

    return sample(n, corpus_seq), sample(n_queries, query_seq)


def _unit(x: np.ndarray) -> np.ndarray:
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def exact_top_k(queries: np.ndarray, corpus: np.ndarray, k: int, chunk: int = 50_000) -> np.ndarray:
    """Row ids of the `k` largest dot products per query, best first (numpy matmul + argpartition)."""
    best_ids = np.zeros((len(queries), 0), dtype=np.int64)
    best_scores = np.zeros((len(queries), 0), dtype=np.float32)
    for start in range(0, len(corpus), chunk):
        scores = queries @ corpus[start : start + chunk].T
        kk = min(k, scores.shape[1])
        part = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]
        all_scores = np.concatenate([best_scores, np.take_along_axis(scores, part, 1)], axis=1)
        all_ids = np.concatenate([best_ids, part + start], axis=1)
        keep = np.argsort(-all_scores, axis=1, kind="stable")[:, :k]
        best_scores = np.take_along_axis(all_scores, keep, 1)
        best_ids = np.take_along_axis(all_ids, keep, 1)
    return best_ids


def recall_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean fraction of each row of `truth` (q, k) that appears in the same row of `found`."""
    k = truth.shape[1]
    hits = [len(np.intersect1d(f[f >= 0], t)) for f, t in zip(found[:, :k], truth, strict=True)]
    return float(np.mean(hits) / k)


def size_label(n: int) -> str:
    """100000 -> "100k", 1000000 -> "1m"."""
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}m"
    if n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated corpus sizes")
    parser.add_argument("--distributions", default=",".join(DISTRIBUTIONS))
    parser.add_argument("--parts", default="exact,hnsw,binary,int8", help="which searches to measure")
    parser.add_argument("--dim", type=int, default=DIM)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--queries", type=int, default=1000, help="queries for recall and batch-100 latency")
    parser.add_argument("--scan-latency-queries", type=int, default=20, help="batch-1 queries for scans")
    parser.add_argument("--ann-latency-queries", type=int, default=200, help="batch-1 queries for HNSW")
    parser.add_argument("--exact-batches", type=int, default=3, help="batches of 100 for exact search")
    parser.add_argument("--metric", default="cosine", choices=("cosine", "dot"), help="HNSW metric")
    parser.add_argument("--connectivity", type=int, default=16)
    parser.add_argument("--expansion-add", type=int, default=128)
    parser.add_argument("--ef", default="16,32,64,128,256,512,1024", help="expansion_search values")
    parser.add_argument("--hnsw-dtype", default="f32", choices=("f32", "f16", "bf16"))
    parser.add_argument("--target-recall", type=float, default=0.98)
    parser.add_argument("--multipliers", default="2,4,10", help="rescore multipliers to measure")
    parser.add_argument("--centres", type=int, default=2048)
    parser.add_argument("--spread", type=float, default=1.0, help="cluster noise norm / centre norm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="N=20000, 200 queries, ef 64,128")
    parser.add_argument("--name", default=None, help="result name (default search_scale-<sizes>)")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.queries, args.ann_latency_queries, args.scan_latency_queries = "20000", 200, 50, 10
        args.exact_batches, args.ef = 2, "64,128"
    args.sizes = [int(v) for v in args.sizes.split(",")]
    args.ef = [int(v) for v in args.ef.split(",")]
    args.multipliers = [int(v) for v in args.multipliers.split(",")]
    args.distributions = args.distributions.split(",")
    args.parts = args.parts.split(",")
    if bad := set(args.distributions) - set(DISTRIBUTIONS):
        parser.error(f"unknown distributions {sorted(bad)}")
    if bad := set(args.parts) - {"exact", "hnsw", "binary", "int8"}:
        parser.error(f"unknown parts {sorted(bad)}")
    if min(args.sizes + args.ef + args.multipliers) < 1 or args.queries < 100 or args.k < 1:
        parser.error("sizes, ef and multipliers must be positive, --queries at least 100")
    if max(args.scan_latency_queries, args.ann_latency_queries, 100 * args.exact_batches) > args.queries:
        parser.error("latency query counts cannot exceed --queries")
    args.name = args.name or (
        "search_scale-quick" if args.quick else "search_scale-" + "-".join(size_label(n) for n in args.sizes)
    )
    return args


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def latency(search: Callable[[np.ndarray], Any], queries: np.ndarray, batch: int) -> dict[str, float]:
    """ms per query over `queries` searched `batch` at a time (after one warm-up batch)."""
    search(queries[:batch])
    times = []
    for start in range(0, len(queries), batch):
        t = time.perf_counter()
        search(queries[start : start + batch])
        times.append((time.perf_counter() - t) / len(queries[start : start + batch]))
    return {
        "ms_per_query_mean": 1000 * statistics.fmean(times),
        "ms_per_query_median": 1000 * statistics.median(times),
        "queries": len(queries),
    }


def search_in_batches(
    search: Callable[[np.ndarray], np.ndarray], queries: np.ndarray
) -> tuple[np.ndarray, float]:
    """(ids of all queries, ms per query) searching 100 queries at a time."""
    search(queries[:100])
    found = []
    start = time.perf_counter()
    for s in range(0, len(queries), 100):
        found.append(search(queries[s : s + 100]))
    return np.concatenate(found), 1000 * (time.perf_counter() - start) / len(queries)


def measure_exact(
    args: argparse.Namespace, corpus: np.ndarray, queries: np.ndarray, truth: np.ndarray
) -> dict:
    import torch

    from munjang.search import semantic_search

    tensor = torch.from_numpy(corpus)
    k = args.k

    def munjang_search(score_function: str) -> Callable[[np.ndarray], np.ndarray]:
        def run(q: np.ndarray) -> np.ndarray:
            hits = semantic_search(torch.from_numpy(q), tensor, top_k=k, score_function=score_function)
            return np.array([[h.corpus_id for h in row] for row in hits])

        return run

    def numpy_search(q: np.ndarray) -> np.ndarray:
        return exact_top_k(q, corpus, k, chunk=len(corpus))

    out: dict[str, Any] = {}
    scan = queries[: args.scan_latency_queries]
    batch = queries[: 100 * args.exact_batches]
    for name, fn in (
        ("munjang_semantic_search_dot", munjang_search("dot")),
        ("munjang_semantic_search_cosine", munjang_search("cosine")),
        ("numpy_matmul_argpartition", numpy_search),
    ):
        found = fn(batch)
        out[name] = {
            "batch1": latency(fn, scan, 1),
            "batch100": latency(fn, batch, 100),
            "recall_at_k_vs_reference": recall_at_k(found, truth[: len(batch)]),
        }
        log(
            f"exact {name}: batch-1 {out[name]['batch1']['ms_per_query_mean']:.2f} ms/q, "
            f"batch-100 {out[name]['batch100']['ms_per_query_mean']:.3f} ms/q"
        )
    return out


def measure_hnsw(
    args: argparse.Namespace, corpus: np.ndarray, queries: np.ndarray, truth: np.ndarray
) -> dict:
    from munjang.search.index.ann import HNSWIndex

    n = len(corpus)
    index = HNSWIndex(
        args.dim,
        metric=args.metric,
        connectivity=args.connectivity,
        expansion_add=args.expansion_add,
        dtype=args.hnsw_dtype,
    )
    gc.collect()
    rss_before = rss_bytes()
    start = time.perf_counter()
    step = max(100_000, n // 10)
    for s in range(0, n, step):
        index.add(np.arange(s, min(n, s + step)), corpus[s : s + step])
        log(f"HNSW build: {min(n, s + step):,} / {n:,} after {time.perf_counter() - start:.0f} s")
    build_s = time.perf_counter() - start
    out: dict[str, Any] = {
        "config": index.get_config_dict(),
        "build_s": build_s,
        "build_vectors_per_s": n / build_s,
        "memory_bytes": index.memory_bytes(),
        "memory_bytes_per_vector": index.memory_bytes() / n,
        "rss_growth_bytes": rss_bytes() - rss_before,
        "ef_search": {},
    }
    for ef in args.ef:

        def run(q: np.ndarray, ef: int = ef) -> np.ndarray:
            return index.search(q, args.k, expansion=ef)[0]

        found, batch100 = search_in_batches(run, queries)
        row = {
            "recall_at_k": recall_at_k(found, truth),
            "batch1": latency(run, queries[: args.ann_latency_queries], 1),
            "batch100_ms_per_query": batch100,
        }
        out["ef_search"][str(ef)] = row
        log(
            f"HNSW ef={ef}: recall@{args.k} {row['recall_at_k']:.4f}, batch-1 "
            f"{row['batch1']['ms_per_query_mean']:.3f} ms/q, batch-100 {batch100:.3f} ms/q"
        )
    reached = [ef for ef in args.ef if out["ef_search"][str(ef)]["recall_at_k"] >= args.target_recall]
    out["target_recall"] = args.target_recall
    out["smallest_ef_reaching_target"] = min(reached) if reached else None
    return out


def measure_quantized(
    args: argparse.Namespace, kind: str, corpus: np.ndarray, queries: np.ndarray, truth: np.ndarray
) -> dict:
    from munjang.search.index.quantized_index import BinaryIndex, Int8Index

    n = len(corpus)
    start = time.perf_counter()
    if kind == "binary":
        index: Any = BinaryIndex(args.dim, rescore_vectors=corpus)
        without_float: Any = BinaryIndex(args.dim)
    else:
        calibration = corpus[np.random.default_rng(args.seed).choice(n, min(n, 10_000), replace=False)]
        index = Int8Index(args.dim, calibration_embeddings=calibration, rescore_vectors=corpus)
        without_float = None
    index.add(np.arange(n), corpus)
    build_s = time.perf_counter() - start
    out: dict[str, Any] = {
        "build_s": build_s,
        "memory_bytes": index.memory_bytes(),
        "memory_bytes_per_vector": index.memory_bytes() / n,
        "float32_bytes_per_vector": 4 * args.dim,
        "settings": {},
    }
    settings: list[tuple[str, Any, dict[str, Any]]] = [("no_rescoring", index, {"rescore": False})]
    settings += [(f"rescore_x{m}", index, {"rescore_multiplier": m}) for m in args.multipliers]
    if without_float is not None:
        without_float.add(np.arange(n), corpus)
        m = max(args.multipliers)
        settings.append((f"rescore_x{m}_sign_bits_only", without_float, {"rescore_multiplier": m}))
    for name, idx, kwargs in settings:

        def run(q: np.ndarray, idx: Any = idx, kwargs: dict = kwargs) -> np.ndarray:
            return idx.search(q, args.k, **kwargs)[0]

        found, batch100 = search_in_batches(run, queries)
        row = {
            "recall_at_k": recall_at_k(found, truth),
            "batch1": latency(run, queries[: args.scan_latency_queries], 1),
            "batch100_ms_per_query": batch100,
        }
        out["settings"][name] = row
        log(
            f"{kind} {name}: recall@{args.k} {row['recall_at_k']:.4f}, batch-1 "
            f"{row['batch1']['ms_per_query_mean']:.2f} ms/q, batch-100 {batch100:.3f} ms/q"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from common import print_environment, write_result

    env = print_environment()
    from importlib import metadata

    env["usearch"] = metadata.version("usearch")
    print("note: the machine may be shared; compare figures within this run\n")
    results: dict[str, Any] = {}
    payload = {"settings": {k: v for k, v in vars(args).items() if k != "name"}, "results": results}
    for n in args.sizes:
        for distribution in args.distributions:
            log(f"N={n:,} {distribution}: generating data")
            start = time.perf_counter()
            corpus, queries = make_dataset(
                n, args.queries, args.dim, distribution, args.seed, args.centres, args.spread
            )
            row: dict[str, Any] = {"generate_s": time.perf_counter() - start}
            start = time.perf_counter()
            truth = exact_top_k(queries, corpus, args.k)
            row["ground_truth_s"] = time.perf_counter() - start
            nearest = np.einsum("qd,qd->q", queries, corpus[truth[:, 0]])
            tenth = np.einsum("qd,qd->q", queries, corpus[truth[:, -1]])
            row["similarity_of_1st_and_10th_neighbour"] = [float(nearest.mean()), float(tenth.mean())]
            log(
                f"ground truth in {row['ground_truth_s']:.1f} s; mean cos of the 1st / 10th neighbour: "
                f"{nearest.mean():.3f} / {tenth.mean():.3f}"
            )
            results.setdefault(size_label(n), {})[distribution] = row
            # The slow HNSW build last, and the results written after each part: a run stopped early
            # keeps what it measured.
            for part in ("exact", "binary", "int8", "hnsw"):
                if part not in args.parts:
                    continue
                if part == "exact":
                    row[part] = measure_exact(args, corpus, queries, truth)
                elif part == "hnsw":
                    row[part] = measure_hnsw(args, corpus, queries, truth)
                else:
                    row[part] = measure_quantized(args, part, corpus, queries, truth)
                gc.collect()
                log(f"wrote {write_result(args.name, payload, env)}")
            del corpus, queries
            gc.collect()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
