"""What verifying the saved index files costs a new reader: open time of a folder collection.

A folder collection of `--rows` passages (`index="exact"`, `--dim`-d vectors from a hashing
encoder, so no model runs; the "word" tokenizer, so no Korean analyser loads) is built with the
munjang on PYTHONPATH, then a new reader process opens it and searches, `--repeats` times (after
one warm-up: the page cache holds the files, as it does for the readers of a serving machine):
import, `Collection.open` (the dense matrix mapped, and now verified: xxh3 over its bytes), the
first dense search, the first lexical search (the BM25 files mapped, and now verified). Run it once
with the code before and once after, each building its own collection (the files' formats differ):

    PYTHONPATH=<before>/src python bench/index_open_cost.py --name index_open_cost-before
    PYTHONPATH=src python bench/index_open_cost.py --name index_open_cost-after

It also times xxh3-64 alone over the saved dense files (the cost per byte of any index file).

`--index hnsw` builds the graph as segments of `--segment-size` passages instead, and times apart
what checking the graph's segments against their manifest costs a reader (a folder listing and
one small file; `index/segmented_graph.py`): run it at two `--rows` to see it stay flat:

    PYTHONPATH=src python bench/index_open_cost.py --index hnsw --rows 50000 --name index_open_cost-hnsw-50k
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load_corpus, print_environment, write_result


class HashEncoder:
    """A fixed random unit vector per text (seeded by its CRC): encoding costs next to nothing."""

    prompts: dict[str, str] = {}  # noqa: RUF012

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def get_embedding_dimension(self) -> int:
        return self.dim

    def encode(self, texts: list[str], **_: Any) -> np.ndarray:
        out = np.stack(
            [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(self.dim) for t in texts]
        ).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def build(folder: Path, rows: int, dim: int, index: str = "exact", segment_size: int = 131_072) -> float:
    from munjang.search.collection.collection import Collection

    base = load_corpus(10_000, seed=3)
    rng = random.Random(3)
    texts = [" ".join(rng.sample(base, 3)) for _ in range(rows)]  # three sentences a passage
    start = time.perf_counter()
    options: dict[str, Any] = {"index": index}
    if index == "hnsw":
        options["hnsw"] = {"segment_size": segment_size}
    with Collection.create(folder, encoder=HashEncoder(dim), tokenizer="word", **options) as col:
        for first in range(0, rows, 50_000):
            part = texts[first : first + 50_000]
            col.add([f"d{first + i}" for i in range(len(part))], part)
        col.flush()
    return time.perf_counter() - start


def measure(folder: Path, dim: int) -> dict[str, float]:
    """One reader: seconds for each step (run in a process of its own)."""
    t0 = time.perf_counter()
    from munjang.search.collection.collection import Collection

    t1 = time.perf_counter()
    col = Collection.open(folder, encoder=HashEncoder(dim), readonly=True)
    t2 = time.perf_counter()
    col.search("주식 시장이 급락했다", k=10)
    t3 = time.perf_counter()
    col.search("주식 시장이 급락했다", k=10, mode="lexical")
    t4 = time.perf_counter()
    col.close()
    times = {"import": t1 - t0, "open": t2 - t1, "first_dense": t3 - t2, "first_lexical": t4 - t3}
    graphs = list(folder.glob("dense-*.hnsw"))
    try:  # the code measured may be older than the manifests
        from munjang.search.index.segmented_graph import _listed_files, read_manifest
    except ImportError:
        return times
    if graphs:
        t5 = time.perf_counter()
        _listed_files(graphs[0], read_manifest(graphs[0])["names"])
        times["manifest_check"] = time.perf_counter() - t5
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--index", choices=["exact", "hnsw"], default="exact")
    parser.add_argument("--segment-size", type=int, default=131_072, help="passages per HNSW graph segment")
    parser.add_argument("--name", default="index_open_cost")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.dim)))
        return
    env = print_environment()
    work = Path(tempfile.mkdtemp(prefix="munjang-open-cost-"))
    try:
        folder = work / "c"
        built = build(folder, args.rows, args.dim, args.index, args.segment_size)
        files = {p.name: p.stat().st_size for p in [*folder.glob("dense-*"), *(folder / "lexical").iterdir()]}
        size = sum(files.values()) / 2**20
        print(f"built {args.rows:,} passages in {built:.1f} s; index files {size:.1f} MiB")
        command = [sys.executable, __file__, "--dim", str(args.dim), "--measure", str(folder)]
        runs = []
        for i in range(args.repeats + 1):
            out = subprocess.run(command, check=True, capture_output=True, text=True, env=os.environ)
            if i:  # the first warms the page cache
                runs.append(json.loads(out.stdout.splitlines()[-1]))
                print(" ".join(f"{k} {v * 1000:.1f} ms" for k, v in runs[-1].items()))
        median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        import xxhash

        hashed, size = 0.0, 0
        for dense in folder.glob(f"dense-*.{args.index}*"):
            data = dense.read_bytes()
            start = time.perf_counter()
            xxhash.xxh3_64_hexdigest(data)
            hashed, size = hashed + time.perf_counter() - start, size + len(data)
        print("median: " + " ".join(f"{k} {v * 1000:.2f} ms" for k, v in median.items()))
        print(f"xxh3-64 over the {size / 2**20:.0f} MiB of dense files: {hashed * 1000:.1f} ms")
        payload = {
            "rows": args.rows, "dim": args.dim, "index": args.index, "segment_size": args.segment_size,
            "repeats": args.repeats, "build_s": built, "index_files_bytes": files, "runs_s": runs,
            "median_s": median, "xxh3_matrix_s": hashed, "matrix_bytes": size,
        }  # fmt: skip
        print(write_result(args.name, payload, env))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
