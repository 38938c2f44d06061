"""Which HNSW library for munjang: usearch vs faiss-cpu (IndexHNSWFlat, inner product) vs hnswlib.

Same data (synthetic unit vectors, d=384, uniform and clustered), same M / ef_construction / ef_search,
inner product (= cosine on unit vectors), all cores for batch build and search. Each library runs in
a fresh process (spawned) so resident memory and thread pools do not leak between them. Reported per
library and distribution: build time, memory (resident-set growth during build, the library's own
figure where it has one, and the saved file size), query latency at batch 1 and batch 100, recall@10
against exact search at each ef_search. usearch also runs storing f16 and bf16 (its f32 kernels are
the slow part on this CPU; the half-precision ones are not). A second, small run probes the features a
collection needs: incremental add, delete, replace (re-add an id), arbitrary 64-bit ids, save/load,
memory-mapped load.

    python bench/ann_choice.py                 # N=100k, both distributions (about 40 min on 2 cores)
    python bench/ann_choice.py --quick         # N=10k, 200 queries: a smoke run
    python bench/ann_choice.py --n 20000 --distributions clustered --libraries usearch,hnswlib
    python bench/ann_choice.py --n 20000 --threads 1 --name ann_choice-20k-1thread   # kernels alone
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result
from search_scale import DISTRIBUTIONS, exact_top_k, make_dataset, recall_at_k, rss_bytes

LIBRARIES = ("usearch", "usearch-f16", "usearch-bf16", "faiss", "hnswlib")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="corpus size (default 100000)")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=1000, help="queries for recall and batch-100 latency")
    parser.add_argument("--latency-queries", type=int, default=200, help="queries timed one at a time")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--m", type=int, default=16, help="HNSW M / usearch connectivity (default 16)")
    parser.add_argument("--ef-construction", type=int, default=128)
    parser.add_argument("--ef-search", default="64,128,256", help="comma-separated ef_search values")
    parser.add_argument("--distributions", default=",".join(DISTRIBUTIONS))
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    parser.add_argument("--centres", type=int, default=2048, help="mixture centres (clustered data)")
    parser.add_argument("--spread", type=float, default=1.0, help="cluster noise norm / centre norm")
    parser.add_argument("--threads", type=int, default=0, help="threads per library (default 0: all cores)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="N=10000, 200 queries, 50 timed one by one")
    parser.add_argument("--name", default=None, help="result name (default ann_choice, ann_choice-quick)")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.queries, args.latency_queries = 10_000, 200, 50
    args.ef_search = [int(v) for v in args.ef_search.split(",")]
    args.distributions = args.distributions.split(",")
    args.libraries = args.libraries.split(",")
    for name in ("n", "dim", "queries", "latency_queries", "k", "m", "ef_construction"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.threads < 0:
        parser.error("--threads must be 0 (all cores) or more")
    if args.latency_queries > args.queries:
        parser.error("--latency-queries cannot exceed --queries")
    if bad := set(args.distributions) - set(DISTRIBUTIONS):
        parser.error(f"unknown distributions {sorted(bad)}")
    if bad := set(args.libraries) - set(LIBRARIES):
        parser.error(f"unknown libraries {sorted(bad)}")
    args.name = args.name or ("ann_choice-quick" if args.quick else "ann_choice")
    return args


class _Usearch:
    dtype = "f32"

    def __init__(self, dim: int, m: int, ef_construction: int, n: int, threads: int) -> None:
        from usearch.index import Index

        self.threads = threads  # 0 = all cores

        self.index = Index(
            ndim=dim, metric="ip", dtype=self.dtype, connectivity=m, expansion_add=ef_construction
        )

    def add(self, ids: np.ndarray, x: np.ndarray) -> None:
        self.index.add(ids.astype(np.uint64), x, threads=self.threads)

    def set_ef(self, ef: int) -> None:
        self.index.expansion_search = ef

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        keys = self.index.search(q, k, threads=self.threads).keys
        return np.asarray(keys, dtype=np.int64).reshape(len(q), -1)

    def memory(self) -> int | None:
        return int(self.index.memory_usage)

    def save(self, path: str) -> None:
        self.index.save(path)


class _UsearchF16(_Usearch):
    dtype = "f16"  # vectors stored as IEEE half floats: half the memory, faster kernels


class _UsearchBF16(_Usearch):
    dtype = "bf16"


class _Faiss:
    def __init__(self, dim: int, m: int, ef_construction: int, n: int, threads: int) -> None:
        import faiss

        if threads:
            faiss.omp_set_num_threads(threads)

        self.index = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = ef_construction

    def add(self, ids: np.ndarray, x: np.ndarray) -> None:
        self.index.add(x)  # ids are the insertion order 0..n-1 here

    def set_ef(self, ef: int) -> None:
        self.index.hnsw.efSearch = ef

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        return self.index.search(q, k)[1].astype(np.int64)

    def memory(self) -> int | None:
        return None

    def save(self, path: str) -> None:
        import faiss

        faiss.write_index(self.index, path)


class _Hnswlib:
    def __init__(self, dim: int, m: int, ef_construction: int, n: int, threads: int) -> None:
        import hnswlib

        self.threads = threads or -1

        self.index = hnswlib.Index(space="ip", dim=dim)
        self.index.init_index(max_elements=n, ef_construction=ef_construction, M=m, random_seed=100)

    def add(self, ids: np.ndarray, x: np.ndarray) -> None:
        self.index.add_items(x, ids, num_threads=self.threads)

    def set_ef(self, ef: int) -> None:
        self.index.set_ef(ef)

    def search(self, q: np.ndarray, k: int) -> np.ndarray:
        return self.index.knn_query(q, k, num_threads=self.threads)[0].astype(np.int64)

    def memory(self) -> int | None:
        return None

    def save(self, path: str) -> None:
        self.index.save_index(path)


ADAPTERS = {
    "usearch": _Usearch,
    "usearch-f16": _UsearchF16,
    "usearch-bf16": _UsearchBF16,
    "faiss": _Faiss,
    "hnswlib": _Hnswlib,
}


def library_version(library: str) -> str:
    from importlib import metadata

    package = {"faiss": "faiss-cpu", "hnswlib": "hnswlib"}.get(library, "usearch")
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def measure(library: str, params: dict[str, Any]) -> dict[str, Any]:
    """Build one library's index on the benchmark data and time it (runs in a fresh process)."""
    corpus, queries = make_dataset(
        params["n"],
        params["queries"],
        params["dim"],
        params["distribution"],
        params["seed"],
        centres=params["centres"],
        spread=params["spread"],
    )
    k = params["k"]
    gc.collect()
    rss_before = rss_bytes()
    index = ADAPTERS[library](
        params["dim"], params["m"], params["ef_construction"], params["n"], params["threads"]
    )
    start = time.perf_counter()
    index.add(np.arange(params["n"], dtype=np.int64), corpus)
    build_s = time.perf_counter() - start
    rss_after = rss_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "index")
        index.save(path)
        file_bytes = Path(path).stat().st_size
    per_ef: dict[str, Any] = {}
    for ef in params["ef_search"]:
        index.set_ef(ef)
        index.search(queries[:10], k)  # warm-up
        single = []
        for i in range(params["latency_queries"]):
            t = time.perf_counter()
            index.search(queries[i : i + 1], k)
            single.append(time.perf_counter() - t)
        found = []
        start = time.perf_counter()
        for s in range(0, len(queries), 100):
            found.append(index.search(queries[s : s + 100], k))
        batch_s = time.perf_counter() - start
        per_ef[str(ef)] = {
            "ids": np.concatenate(found).tolist(),
            "batch1_ms_per_query_mean": 1000 * statistics.fmean(single),
            "batch1_ms_per_query_p50": 1000 * statistics.median(single),
            "batch1_ms_per_query_p99": 1000 * float(np.quantile(single, 0.99)),
            "batch100_ms_per_query": 1000 * batch_s / len(queries),
        }
    return {
        "library": library,
        "version": library_version(library),
        "build_s": build_s,
        "rss_growth_bytes": rss_after - rss_before,
        "library_memory_bytes": index.memory(),
        "file_bytes": file_bytes,
        "ef_search": per_ef,
    }


def probe(library: str) -> dict[str, Any]:
    """Try the operations a persistent collection needs on a small index; record what works."""
    rng = np.random.default_rng(0)
    dim = 32
    x = rng.standard_normal((2000, dim), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    big = np.arange(2000, dtype=np.int64) + 2**40  # ids that are not row numbers
    out: dict[str, Any] = {"library": library}

    def attempt(name: str, fn: Any) -> None:
        try:
            result = fn()
            out[name] = bool(result) if not isinstance(result, str) else result
        except Exception as e:
            out[name] = False
            out[f"{name}_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"

    if library == "usearch":
        from usearch.index import Index

        index = Index(ndim=dim, metric="ip", dtype="f32")

        def top(v: np.ndarray) -> int:
            return int(index.search(v, 1).keys[0])

        def add(ids: np.ndarray, v: np.ndarray) -> None:
            index.add(ids.astype(np.uint64), v)

        def delete(ids: np.ndarray) -> None:
            index.remove(ids.astype(np.uint64))

        def replace(i: int, v: np.ndarray) -> None:
            index.remove(np.array([i], dtype=np.uint64))
            index.add(np.array([i], dtype=np.uint64), v[None])

        def roundtrip(path: str, mmap: bool) -> bool:
            index.save(path)
            other = Index.restore(path, view=mmap)
            if other is None:
                return False
            return np.array_equal(other.search(x[:20], 5).keys, index.search(x[:20], 5).keys)

    elif library == "faiss":
        import faiss

        index = faiss.IndexIDMap(faiss.IndexHNSWFlat(dim, 16, faiss.METRIC_INNER_PRODUCT))

        def top(v: np.ndarray) -> int:
            return int(index.search(v[None], 1)[1][0, 0])

        def add(ids: np.ndarray, v: np.ndarray) -> None:
            index.add_with_ids(v, ids)

        def delete(ids: np.ndarray) -> None:
            index.remove_ids(ids)

        def replace(i: int, v: np.ndarray) -> None:
            index.remove_ids(np.array([i], dtype=np.int64))
            index.add_with_ids(v[None], np.array([i], dtype=np.int64))

        def roundtrip(path: str, mmap: bool) -> bool:
            faiss.write_index(index, path)
            other = faiss.read_index(path, faiss.IO_FLAG_MMAP_IFC if mmap else 0)
            return np.array_equal(other.search(x[:20], 5)[1], index.search(x[:20], 5)[1])

    else:
        import hnswlib

        index = hnswlib.Index(space="ip", dim=dim)
        index.init_index(max_elements=1000, M=16, ef_construction=128)

        def top(v: np.ndarray) -> int:
            return int(index.knn_query(v[None], 1)[0][0, 0])

        def add(ids: np.ndarray, v: np.ndarray) -> None:
            index.add_items(v, ids)

        def delete(ids: np.ndarray) -> None:
            for i in ids:
                index.mark_deleted(int(i))

        def replace(i: int, v: np.ndarray) -> None:
            index.add_items(v[None], np.array([i]))  # hnswlib updates an existing label in place

        def roundtrip(path: str, mmap: bool) -> bool:
            if mmap:
                raise RuntimeError("hnswlib has no memory-mapped load")
            index.save_index(path)
            other = hnswlib.Index(space="ip", dim=dim)
            other.load_index(path)
            return np.array_equal(other.knn_query(x[:20], 5)[0], index.knn_query(x[:20], 5)[0])

    attempt("add_with_64bit_ids", lambda: (add(big[:1000], x[:1000]), top(x[5]) == big[5])[1])

    def incremental() -> bool | str:
        try:
            add(big[1000:], x[1000:])
        except Exception as e:
            if library != "hnswlib":
                raise
            index.resize_index(2000)  # hnswlib: fixed capacity, grow it by hand
            add(big[1000:], x[1000:])
            return f"yes, after resize_index ({type(e).__name__} at capacity)"
        return top(x[1500]) == big[1500]

    attempt("incremental_add", incremental)
    attempt("delete", lambda: (delete(big[:10]), all(top(x[i]) != big[i] for i in range(10)))[1])
    attempt("replace_vector", lambda: (replace(int(big[20]), -x[21]), top(-x[21]) == big[20])[1])
    with tempfile.TemporaryDirectory() as tmp:
        attempt("save_load", lambda: roundtrip(str(Path(tmp) / "a"), False))
        attempt("memory_mapped_load", lambda: roundtrip(str(Path(tmp) / "b"), True))
    return out


def run_isolated(fn: Any, *args: Any) -> Any:
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    env = print_environment()
    env["libraries"] = {lib: library_version(lib) for lib in ("usearch", "faiss", "hnswlib")}
    print("note: the machine may be shared; compare libraries within this run, not across runs\n")
    features = {
        lib: run_isolated(probe, lib) for lib in args.libraries if lib in ("usearch", "faiss", "hnswlib")
    }
    for lib, found in features.items():
        print(f"{lib:>8}: " + ", ".join(f"{k}={v}" for k, v in found.items() if k != "library"))
    print()
    results: dict[str, Any] = {}
    for distribution in args.distributions:
        corpus, queries = make_dataset(
            args.n, args.queries, args.dim, distribution, args.seed, args.centres, args.spread
        )
        truth = exact_top_k(queries, corpus, args.k)
        del corpus
        params = {
            "n": args.n,
            "queries": args.queries,
            "dim": args.dim,
            "distribution": distribution,
            "seed": args.seed,
            "centres": args.centres,
            "spread": args.spread,
            "k": args.k,
            "m": args.m,
            "ef_construction": args.ef_construction,
            "ef_search": args.ef_search,
            "latency_queries": args.latency_queries,
            "threads": args.threads,
        }
        results[distribution] = {}
        for lib in args.libraries:
            row = run_isolated(measure, lib, params)
            for stats in row["ef_search"].values():
                stats["recall_at_k"] = recall_at_k(np.asarray(stats.pop("ids")), truth)
            results[distribution][lib] = row
            print(
                f"{distribution:>9} {lib:>8}: build {row['build_s']:7.1f} s, "
                f"RSS +{row['rss_growth_bytes'] / 2**20:7.1f} MiB, file {row['file_bytes'] / 2**20:7.1f} MiB"
            )
            for ef, stats in row["ef_search"].items():
                print(
                    f"{'':>19}ef={ef:>4}: recall@{args.k} {stats['recall_at_k']:.4f}, "
                    f"batch-1 {stats['batch1_ms_per_query_mean']:.3f} ms/q, "
                    f"batch-100 {stats['batch100_ms_per_query']:.3f} ms/q"
                )
        base = results[distribution].get("usearch")
        if base:
            for row in results[distribution].values():
                row["build_time_vs_usearch"] = row["build_s"] / base["build_s"]
    payload = {
        "settings": {k: v for k, v in vars(args).items() if k != "name"},
        "features": features,
        "results": results,
    }
    path = write_result(args.name, payload, env)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
