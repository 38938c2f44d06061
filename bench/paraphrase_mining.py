"""Paraphrase mining over 100k sentences in bounded memory: munjang vs sentence-transformers, and a
brute-force N x N check on a sample.

The corpus (default): the real sentences the shared data offers (15,000 KorSTS and 15,000 STSb
sentences from `load_corpus`, plus the unique KorNLI XNLI dev/test sentences: about 40,000), and,
since that is fewer than --n, distinct concatenations "a b" of two random real sentences of the same
language up to --n. All are encoded with the embedded all-MiniLM-L6-v2: 5M tokens, about half an hour
on 2 busy cores, so --cache-dir keeps the embeddings (checked on re-use by re-encoding the first rows).
--embeddings-only skips the model: synthetic clustered unit vectors (d=384).

Each mining run happens in its own subprocess that loads the embeddings, notes its peak RSS
(ru_maxrss) as the baseline, mines, and reports the new peak: munjang with the default chunks,
sentence-transformers' util.paraphrase_mining_embeddings with the same parameters, and munjang with
small chunks (memory follows the chunk sizes, not N). The subprocesses are started by a small launcher
process, because Linux hands the spawning process's peak on to a child's ru_maxrss. Then, on --sample
rows drawn from the real sentences, munjang is compared with the full N x N cosine matrix in numpy
(float64): the same pair set, scores within 1e-6.

    python bench/paraphrase_mining.py                                  # 100k real + concatenated, MiniLM
    python bench/paraphrase_mining.py --embeddings-only                # 100k synthetic, no encoding
    python bench/paraphrase_mining.py --quick                          # 3k sentences, a quick check
    python bench/paraphrase_mining.py --cache-dir ~/.cache/munjang/bench   # keep/reuse the embeddings
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `common`, also under `python -m ...`

from common import load_corpus, print_environment, shared_data_dir, write_result

STS_PER_LANGUAGE = 15_000  # KorSTS and STSb each have a little over 15,400 unique sentences
KORNLI_FILES = ("kornli/xnli.dev.ko.tsv", "kornli/xnli.test.ko.tsv.gz")
SCORE_TOLERANCE = 1e-6
SYNTHETIC_DIM = 384
SYNTHETIC_CLUSTER_SIZE = 20


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Paraphrase mining over many sentences: memory, time, parity with sentence-transformers "
        "and with brute force on a sample."
    )
    parser.add_argument("--n", type=int, default=100_000, help="sentences/embeddings (default 100000)")
    parser.add_argument(
        "--sample", type=int, default=2000, help="rows of the brute-force check (default 2000)"
    )
    parser.add_argument(
        "--embeddings-only", action="store_true", help="synthetic clustered embeddings, no model"
    )
    parser.add_argument("--quick", action="store_true", help="--n 3000 --sample 1000, for a quick check")
    parser.add_argument("--top-k", type=int, default=100, help="neighbours per sentence (default 100)")
    parser.add_argument("--max-pairs", type=int, default=500_000, help="pairs kept (default 500000)")
    parser.add_argument("--query-chunk-size", type=int, default=5000, help="default 5000")
    parser.add_argument("--corpus-chunk-size", type=int, default=100_000, help="default 100000")
    parser.add_argument(
        "--small-chunks",
        type=int,
        nargs=2,
        default=(1000, 25_000),
        metavar=("QUERY", "CORPUS"),
        help="chunk sizes of the extra small-chunk munjang run (default 1000 25000)",
    )
    parser.add_argument("--no-small-chunks", action="store_true", help="skip the small-chunk run")
    parser.add_argument("--no-reference", action="store_true", help="skip sentence-transformers")
    parser.add_argument("--batch-size", type=int, default=32, help="encoding batch size (default 32)")
    parser.add_argument("--seed", type=int, default=0, help="corpus and sample seed (default 0)")
    parser.add_argument("--cache-dir", type=Path, default=None, help="keep/reuse the embeddings here")
    parser.add_argument("--no-write", action="store_true", help="do not write bench/results/*.json")
    parser.add_argument("--worker", choices=("munjang", "sentence-transformers"), help=argparse.SUPPRESS)
    parser.add_argument("--embeddings", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.sample = 3000, 1000
    for name in ("n", "sample", "top_k", "max_pairs", "query_chunk_size", "corpus_chunk_size", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.n < 2:
        parser.error("--n must be at least 2")
    args.sample = min(args.sample, args.n)
    return args


# -- memory -----------------------------------------------------------------------------------------


def peak_rss_mb() -> float:
    """This process's peak resident set size so far (ru_maxrss is in KiB on Linux).

    Linux carries the spawning process's own peak over into a child's ru_maxrss, so workers are
    started from a small launcher (`Launcher`), never from the benchmark process after it has grown.
    """
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def vm_hwm_mb() -> float:
    """The peak RSS of this process's own memory since its exec (VmHWM), a cross-check of ru_maxrss."""
    with open("/proc/self/status", encoding="ascii") as f:
        line = next(line for line in f if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def current_rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# -- worker: one mining run in a fresh process -------------------------------------------------------


def run_worker(args: argparse.Namespace) -> int:
    import torch

    if args.worker == "munjang":
        from munjang.applications import paraphrase_mining_embeddings as mine
    else:
        from sentence_transformers.util import paraphrase_mining_embeddings as mine

    embeddings = torch.from_numpy(np.load(args.embeddings))
    baseline_peak, baseline_rss, baseline_hwm = peak_rss_mb(), current_rss_mb(), vm_hwm_mb()
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    pairs = mine(
        embeddings,
        top_k=args.top_k,
        max_pairs=args.max_pairs,
        query_chunk_size=args.query_chunk_size,
        corpus_chunk_size=args.corpus_chunk_size,
    )
    seconds = time.perf_counter() - start
    peak, hwm = peak_rss_mb(), vm_hwm_mb()
    np.savez(
        args.out,
        scores=np.array([p[0] for p in pairs], dtype=np.float64),
        first=np.array([p[1] for p in pairs], dtype=np.int64),
        second=np.array([p[2] for p in pairs], dtype=np.int64),
    )
    report = {
        "seconds": round(seconds, 2),
        "pairs": len(pairs),
        "peak_rss_mb": round(peak, 1),
        "baseline_peak_rss_mb": round(baseline_peak, 1),
        "baseline_rss_mb": round(baseline_rss, 1),
        "mining_rss_increase_mb": round(peak - baseline_peak, 1),
        "vm_hwm_mb": round(hwm, 1),
        "baseline_vm_hwm_mb": round(baseline_hwm, 1),
        "torch_threads": torch.get_num_threads(),
        "load_average_1min_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    print(json.dumps(report))
    return 0


LAUNCHER = """
import json, subprocess, sys
for line in sys.stdin:
    done = subprocess.run(json.loads(line), capture_output=True, text=True, check=False)
    print(json.dumps([done.returncode, done.stdout, done.stderr]), flush=True)
"""


class Launcher:
    """A small process, started before the benchmark grows, that starts the workers: their ru_maxrss
    then starts from its few MiB rather than from this process's peak."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, command: list[str]) -> tuple[int, str, str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        returncode, stdout, stderr = json.loads(self.process.stdout.readline())
        return returncode, stdout, stderr

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


def mine_in_subprocess(
    launcher: Launcher,
    name: str,
    embeddings_path: Path,
    out: Path,
    args: argparse.Namespace,
    query_chunk: int,
    corpus_chunk: int,
) -> dict[str, Any]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        name,
        "--embeddings",
        str(embeddings_path),
        "--out",
        str(out),
        "--top-k",
        str(args.top_k),
        "--max-pairs",
        str(args.max_pairs),
        "--query-chunk-size",
        str(query_chunk),
        "--corpus-chunk-size",
        str(corpus_chunk),
    ]
    returncode, stdout, stderr = launcher.run(command)
    if returncode != 0:
        raise RuntimeError(f"{name} worker failed ({returncode}):\n{stderr[-3000:]}")
    report: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    report.update(query_chunk_size=query_chunk, corpus_chunk_size=corpus_chunk)
    return report


# -- corpus and embeddings --------------------------------------------------------------------------


def kornli_sentences() -> list[str]:
    from munjang.data import read_nli

    seen: dict[str, None] = {}
    for name in KORNLI_FILES:
        data = read_nli(shared_data_dir() / name)
        for premise, hypothesis in zip(data.premises, data.hypotheses, strict=True):
            seen.setdefault(premise, None)
            seen.setdefault(hypothesis, None)
    return list(seen)


def build_corpus(n: int, seed: int) -> tuple[list[str], dict[str, Any]]:
    """`n` distinct texts: real sentences first (shuffled), then same-language concatenations of two."""
    korean = load_corpus(STS_PER_LANGUAGE, seed=seed, lang="ko")
    english = load_corpus(STS_PER_LANGUAGE, seed=seed, lang="en")
    korean_set = set(korean)
    nli = [s for s in kornli_sentences() if s not in korean_set]
    korean += nli
    real = list(dict.fromkeys(korean + english))
    rng = random.Random(seed)
    rng.shuffle(real)
    texts = real[:n]
    seen = set(texts)
    concatenated = 0
    while len(texts) < n:
        pool = korean if concatenated % 2 == 0 else english
        a, b = rng.sample(pool, 2)
        text = f"{a} {b}"
        if text not in seen:
            seen.add(text)
            texts.append(text)
            concatenated += 1
    info = {
        "real_sentences_available": len(real),
        "real_sentences_used": len(texts) - concatenated,
        "concatenated": concatenated,
        "composition": {
            "korsts_sentences": STS_PER_LANGUAGE,
            "stsb_sentences": STS_PER_LANGUAGE,
            "kornli_xnli_dev_test_sentences": len(nli),
        },
        "how_n_is_reached": (
            "all real sentences (KorSTS and STSb via bench/common.load_corpus, KorNLI XNLI dev+test "
            "premises and hypotheses), shuffled; the rest are distinct concatenations 'a b' of two random "
            "real sentences of the same language (Korean and English alternately), encoded like the rest"
            if concatenated
            else "real sentences only"
        ),
    }
    return texts, info


CACHE_CHECK_ROWS = 64


def encode_corpus(texts: list[str], batch_size: int) -> tuple[np.ndarray, dict[str, Any]]:
    import munjang
    from munjang.models.hub import embedded_default_path

    encoder = munjang.load_encoder(device="cpu")
    start = time.perf_counter()
    embeddings = encoder.encode(texts, batch_size=batch_size, show_progress_bar=True)
    seconds = time.perf_counter() - start
    info = {
        "model": str(embedded_default_path()),
        "batch_size": batch_size,
        "encode_seconds": round(seconds, 1),
        "sentences_per_s": round(len(texts) / seconds, 1),
    }
    return np.ascontiguousarray(embeddings, dtype=np.float32), info


def cached_embeddings(path: Path, texts: list[str], batch_size: int) -> np.ndarray | None:
    """The cached embeddings, if they have one row per text and their first rows re-encode the same."""
    if not path.exists():
        return None
    embeddings = np.load(path)
    if embeddings.shape[0] != len(texts):
        return None
    import munjang

    check = munjang.load_encoder(device="cpu").encode(texts[:CACHE_CHECK_ROWS], batch_size=batch_size)
    if float(np.max(np.abs(check - embeddings[:CACHE_CHECK_ROWS]))) > 1e-4:
        return None
    return embeddings


def synthetic_embeddings(n: int, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
    """Unit vectors around random centres (~20 per centre), each centre with its own spread."""
    rng = np.random.default_rng(seed)
    n_centres = max(1, n // SYNTHETIC_CLUSTER_SIZE)
    centres = rng.normal(size=(n_centres, SYNTHETIC_DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    spread = rng.uniform(0.2, 1.2, size=n_centres).astype(np.float32)  # noise norm relative to the centre
    owner = rng.integers(n_centres, size=n)
    out = np.empty((n, SYNTHETIC_DIM), dtype=np.float32)
    for start in range(0, n, 10_000):
        rows = owner[start : start + 10_000]
        noise = rng.normal(size=(len(rows), SYNTHETIC_DIM)).astype(np.float32)
        noise *= (spread[rows] / np.sqrt(SYNTHETIC_DIM))[:, None]
        block = centres[rows] + noise
        out[start : start + len(rows)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    recipe = (
        f"{n_centres} random unit centres in d={SYNTHETIC_DIM}; each row = its centre + Gaussian noise "
        "of norm ~U(0.2, 1.2) (per centre), L2-normalized"
    )
    return out, {"synthetic": recipe, "clusters": n_centres}


def load_embeddings(args: argparse.Namespace) -> tuple[np.ndarray, list[str] | None, dict[str, Any]]:
    source = "synthetic" if args.embeddings_only else "real+concatenated"
    cached = (
        args.cache_dir / f"paraphrase_mining-{source}-{args.n}-seed{args.seed}.npy"
        if args.cache_dir
        else None
    )
    if args.embeddings_only:
        embeddings, info = synthetic_embeddings(args.n, args.seed)
        return embeddings, None, {"source": source, **info}
    texts, info = build_corpus(args.n, args.seed)
    info = {"source": source, **info}
    sidecar = cached.with_suffix(".json") if cached is not None else None
    embeddings = cached_embeddings(cached, texts, args.batch_size) if cached is not None else None
    if embeddings is not None and sidecar is not None:
        print(f"embeddings from {cached} (first {CACHE_CHECK_ROWS} rows re-encoded: the same)")
        encode_info = json.loads(sidecar.read_text()) if sidecar.exists() else {}
        return embeddings, texts, {**info, **encode_info, "embeddings_from_cache": str(cached)}
    print(f"encoding {len(texts)} texts ...")
    embeddings, encode_info = encode_corpus(texts, args.batch_size)
    if cached is not None and sidecar is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        np.save(cached, embeddings)
        sidecar.write_text(json.dumps(encode_info, indent=2) + "\n")
    return embeddings, texts, {**info, **encode_info}


# -- comparisons ------------------------------------------------------------------------------------


def load_pairs(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with np.load(path) as data:
        return data["scores"], data["first"], data["second"]


def compare_pairs(
    ours: tuple[np.ndarray, np.ndarray, np.ndarray], ref: tuple[np.ndarray, np.ndarray, np.ndarray], n: int
) -> dict[str, Any]:
    """Same pair set? Largest score difference on the shared pairs; how the differing pairs score."""
    key_ours, key_ref = ours[1] * n + ours[2], ref[1] * n + ref[2]
    common, at_ours, at_ref = np.intersect1d(key_ours, key_ref, assume_unique=True, return_indices=True)
    only_ours = np.setdiff1d(np.arange(len(key_ours)), at_ours)
    only_ref = np.setdiff1d(np.arange(len(key_ref)), at_ref)
    diff = float(np.max(np.abs(ours[0][at_ours] - ref[0][at_ref]))) if len(common) else 0.0
    result: dict[str, Any] = {
        "pairs": [len(key_ours), len(key_ref)],
        "pair_sets_equal": len(only_ours) == 0 and len(only_ref) == 0,
        "shared_pairs": len(common),
        "only_first": len(only_ours),
        "only_second": len(only_ref),
        "max_abs_score_diff": diff,
        "scores_within_tolerance": diff <= SCORE_TOLERANCE,
        "same_order": len(key_ours) == len(key_ref) and bool(np.array_equal(key_ours, key_ref)),
    }
    if len(only_ours) or len(only_ref):
        differing = np.concatenate([ours[0][only_ours], ref[0][only_ref]])
        cut = min(float(ours[0][-1]), float(ref[0][-1]))
        result["differing_pairs_score_range"] = [float(differing.min()), float(differing.max())]
        result["lowest_kept_score"] = cut
        # Pairs tied with the last kept score: which of them make the cut is a tie-break choice
        # (munjang keeps the lower indices, sentence-transformers' heap the higher ones).
        result["differences_only_ties_at_the_cut"] = bool(np.all(np.abs(differing - cut) <= SCORE_TOLERANCE))
    return result


def brute_force(embeddings: np.ndarray, top_k: int, max_pairs: int | None) -> tuple[np.ndarray, ...]:
    """The full N x N cosine matrix in float64: each row's top_k others (ties: lower index), distinct pairs,
    best max_pairs by (score desc, i, j)."""
    x = embeddings.astype(np.float64)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    scores = x @ x.T
    np.fill_diagonal(scores, -np.inf)
    k = min(top_k, len(x) - 1)
    neighbours = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    rows = np.repeat(np.arange(len(x)), k)
    cols = neighbours.ravel()
    first, second = np.minimum(rows, cols), np.maximum(rows, cols)
    _, keep = np.unique(first * len(x) + second, return_index=True)
    first, second = first[keep], second[keep]
    pair_scores = scores[first, second]
    order = np.lexsort((second, first, -pair_scores))
    if max_pairs is not None:
        order = order[:max_pairs]
    return pair_scores[order], first[order], second[order]


def brute_force_checks(embeddings: np.ndarray, pool: int, args: argparse.Namespace) -> dict[str, Any]:
    """munjang vs the full N x N matrix on a random sample of the first `pool` rows (the real sentences),
    with the run's top_k/max_pairs, and with every pair (top_k = sample - 1) cut at a quarter of them, so
    that the max_pairs cut is exercised."""
    from munjang.applications import paraphrase_mining_embeddings

    size = min(args.sample, pool)
    rows = np.sort(np.random.default_rng(args.seed).choice(pool, size=size, replace=False))
    sample = embeddings[rows]
    all_pairs = size * (size - 1) // 2
    settings = {
        "run_settings": (args.top_k, args.max_pairs),
        "all_pairs_cut": (size - 1, max(1, all_pairs // 4)),
    }
    checks: dict[str, Any] = {
        "sample": size,
        "drawn_from_first_rows": pool,
        "rows_seed": args.seed,
        "reference": "numpy float64 N x N",
    }
    for name, (top_k, max_pairs) in settings.items():
        start = time.perf_counter()
        got = paraphrase_mining_embeddings(sample, top_k=top_k, max_pairs=max_pairs)
        seconds = time.perf_counter() - start
        ours = (
            np.array([p[0] for p in got]),
            np.array([p[1] for p in got], dtype=np.int64),
            np.array([p[2] for p in got], dtype=np.int64),
        )
        comparison = compare_pairs(ours, brute_force(sample, top_k, max_pairs), size)
        checks[name] = {
            "top_k": top_k,
            "max_pairs": max_pairs,
            "munjang_seconds": round(seconds, 2),
            **comparison,
        }
        verdict = (
            "match" if comparison["pair_sets_equal"] and comparison["scores_within_tolerance"] else "DIFFER"
        )
        print(
            f"  brute force [{name}] top_k={top_k} max_pairs={max_pairs}: {len(got)} pairs, {verdict}, "
            f"max |score diff| {comparison['max_abs_score_diff']:.2e}"
        )
    return checks


# -- main ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return run_worker(args)
    launcher = Launcher()  # first, while this process is small
    try:
        return run_benchmark(args, launcher)
    finally:
        launcher.close()


def run_benchmark(args: argparse.Namespace, launcher: Launcher) -> int:
    env = print_environment()
    embeddings, texts, corpus_info = load_embeddings(args)
    n, dim = embeddings.shape
    print(f"{n} embeddings of dimension {dim} ({embeddings.nbytes / 2**20:.0f} MiB)\n")

    runs: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="munjang-mining-") as tmp:
        path = Path(tmp) / "embeddings.npy"
        np.save(path, embeddings)
        plan = [("munjang", "munjang", args.query_chunk_size, args.corpus_chunk_size)]
        if not args.no_reference:
            plan.append(
                (
                    "sentence-transformers",
                    "sentence-transformers",
                    args.query_chunk_size,
                    args.corpus_chunk_size,
                )
            )
        if not args.no_small_chunks:
            plan.append(("munjang-small-chunks", "munjang", *args.small_chunks))
        pairs = {}
        for label, worker, query_chunk, corpus_chunk in plan:
            print(f"mining with {label} (query chunk {query_chunk}, corpus chunk {corpus_chunk}) ...")
            out = Path(tmp) / f"{label}.npz"
            runs[label] = mine_in_subprocess(launcher, worker, path, out, args, query_chunk, corpus_chunk)
            pairs[label] = load_pairs(out)
            r = runs[label]
            print(
                f"  {r['seconds']:.1f} s, {r['pairs']} pairs, peak RSS {r['peak_rss_mb']:.0f} MiB "
                f"(+{r['mining_rss_increase_mb']:.0f} MiB over {r['baseline_peak_rss_mb']:.0f} MiB loaded)"
            )
    comparisons = {}
    for label in ("sentence-transformers", "munjang-small-chunks"):
        if label in pairs:
            comparisons[f"munjang vs {label}"] = compare_pairs(pairs["munjang"], pairs[label], n)
            c = comparisons[f"munjang vs {label}"]
            print(
                f"  munjang vs {label}: pair sets equal {c['pair_sets_equal']} ({c['shared_pairs']} shared), "
                f"max |score diff| {c['max_abs_score_diff']:.2e}"
            )

    pool = int(corpus_info.get("real_sentences_used", n))  # real sentences come first in the corpus
    print(f"\nbrute-force check on {min(args.sample, pool)} rows of the first {pool}")
    checks = brute_force_checks(embeddings, pool, args)

    examples = []
    if texts is not None:
        scores, first, second = pairs["munjang"]
        examples = [
            {"score": round(float(s), 4), "a": texts[i], "b": texts[j]}
            for s, i, j in zip(scores[:5], first[:5], second[:5], strict=True)
        ]
    payload = {
        "n": n,
        "dimension": dim,
        "corpus": corpus_info,
        "params": {
            "top_k": args.top_k,
            "max_pairs": args.max_pairs,
            "query_chunk_size": args.query_chunk_size,
            "corpus_chunk_size": args.corpus_chunk_size,
            "score_function": "cosine",
            "seed": args.seed,
        },
        "embeddings_mib": round(embeddings.nbytes / 2**20, 1),
        "full_score_matrix_gib_if_materialized": round(n * n * 4 / 2**30, 1),
        "score_block_mib": round(
            min(args.query_chunk_size, n) * min(args.corpus_chunk_size, n) * 4 / 2**20, 1
        ),
        "memory_measure": (
            "each run in its own subprocess, started from a small launcher process: peak_rss_mb = ru_maxrss "
            "after mining; mining_rss_increase_mb = that minus ru_maxrss after the imports and loading the "
            "embeddings (the baseline); vm_hwm_mb = /proc/self/status VmHWM, the same peak measured on the "
            "process's own memory, as a cross-check"
        ),
        "runs": runs,
        "comparisons": comparisons,
        "brute_force_check": checks,
        "top_pairs": examples,
    }
    if not args.no_write:
        name = (
            "paraphrase_mining"
            + ("-synthetic" if args.embeddings_only else "")
            + ("-quick" if args.quick else "")
        )
        print(f"wrote {write_result(name, payload, env=env)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
