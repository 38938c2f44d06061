"""Encoding throughput: munjang vs sentence-transformers, same model, batch size and corpus, CPU, fp32.

Both encoders are loaded, warmed up on 64 sentences, then timed in alternation (munjang, ST, munjang,
ST, ...) on the whole corpus with `encode(corpus, batch_size=bs)`. Reported: best and median
sentences/s for each, the munjang/ST ratio, and the largest difference between their embeddings.

    python bench/encode.py                      # embedded all-MiniLM-L6-v2, n=10000, bs=32, 3 repeats
    python bench/encode.py --n 300 --repeats 2  # a quick check
    python bench/encode.py --lang en            # English only (writes results/encode-en.json)
    python bench/encode.py --model ~/.cache/munjang/e5-small
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `common`, also under `python -m bench.encode`

from common import load_corpus, print_environment, write_result

WARMUP_SENTENCES = 64
AGREEMENT_TOLERANCE = 1e-4


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Encoding throughput of munjang vs sentence-transformers (same model, CPU, fp32).",
    )
    parser.add_argument(
        "--model",
        default=None,
        help="model folder (default: the embedded all-MiniLM-L6-v2); e.g. ~/.cache/munjang/e5-small",
    )
    parser.add_argument("--n", type=int, default=10000, help="sentences in the corpus (default 10000)")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size for both (default 32)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="corpus shuffling seed (default 0)")
    parser.add_argument(
        "--lang",
        choices=("mixed", "ko", "en"),
        default="mixed",
        help="corpus language: half Korean/half English (default), Korean only, English only",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="torch.set_num_threads before loading (default: torch's)"
    )
    parser.add_argument("--no-write", action="store_true", help="do not write bench/results/encode.json")
    args = parser.parse_args(argv)
    for name in ("n", "batch_size", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    return args


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def summary(times: list[float], n: int) -> dict[str, Any]:
    best = min(times)
    median = statistics.median(times)
    return {
        "times_s": [round(t, 4) for t in times],
        "best_s": round(best, 4),
        "median_s": round(median, 4),
        "best_sentences_per_s": round(n / best, 1),
        "median_sentences_per_s": round(n / median, 1),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    env = print_environment()

    from sentence_transformers import SentenceTransformer

    import munjang
    from munjang.hub import embedded_default_path

    model_path = Path(args.model).expanduser() if args.model else embedded_default_path()
    if not model_path.is_dir():
        print(f"error: model folder {model_path} does not exist", file=sys.stderr)
        return 2
    corpus = load_corpus(args.n, seed=args.seed, lang=args.lang)
    bs = args.batch_size

    ours = munjang.load_encoder(model_path, device="cpu", dtype=torch.float32)
    reference = SentenceTransformer(str(model_path), device="cpu")
    reference.float()
    if ours.max_seq_length != reference.max_seq_length:
        print(
            f"note: max_seq_length differs (munjang {ours.max_seq_length}, ST {reference.max_seq_length});"
            f" using {ours.max_seq_length} for both"
        )
        reference.max_seq_length = ours.max_seq_length

    def run_ours(texts: list[str]) -> np.ndarray:
        return np.asarray(ours.encode(texts, batch_size=bs, show_progress_bar=False))

    def run_reference(texts: list[str]) -> np.ndarray:
        return np.asarray(reference.encode(texts, batch_size=bs, show_progress_bar=False))

    warmup = corpus[:WARMUP_SENTENCES]
    run_ours(warmup)
    run_reference(warmup)

    times: dict[str, list[float]] = {"munjang": [], "sentence-transformers": []}
    outputs: dict[str, np.ndarray] = {}
    print(f"model {model_path}")
    print(f"n={len(corpus)} batch_size={bs} repeats={args.repeats} threads={torch.get_num_threads()}")
    for i in range(args.repeats):
        for name, fn in (("munjang", run_ours), ("sentence-transformers", run_reference)):
            seconds, out = timed(partial(fn, corpus))
            times[name].append(seconds)
            outputs.setdefault(name, out)
            rate = len(corpus) / seconds
            print(f"  run {i + 1}/{args.repeats} {name:<22} {seconds:8.3f} s  {rate:8.1f} sent/s")

    a, b = outputs["munjang"], outputs["sentence-transformers"]
    if a.shape != b.shape:
        print(
            f"\n!!! WARNING: embedding shapes differ: munjang {a.shape} vs ST {b.shape} !!!\n",
            file=sys.stderr,
        )
        max_abs_diff = float("inf")
    else:
        max_abs_diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    agree = max_abs_diff <= AGREEMENT_TOLERANCE

    results = {name: summary(t, len(corpus)) for name, t in times.items()}
    # throughput ratio = ST time / munjang time, from the unrounded times
    ratio_median = statistics.median(times["sentence-transformers"]) / statistics.median(times["munjang"])
    ratio_best = min(times["sentence-transformers"]) / min(times["munjang"])

    print()
    print(f"{'':<22} {'best sent/s':>12} {'median sent/s':>14} {'best s':>9} {'median s':>9}")
    for name, r in results.items():
        print(
            f"{name:<22} {r['best_sentences_per_s']:>12.1f} {r['median_sentences_per_s']:>14.1f} "
            f"{r['best_s']:>9.3f} {r['median_s']:>9.3f}"
        )
    print(f"{'munjang / ST':<22} {ratio_best:>12.3f} {ratio_median:>14.3f}")
    print(f"max |munjang - ST| over {a.shape} embeddings: {max_abs_diff:.2e}")
    if not agree:
        print(
            f"\n!!! WARNING: embeddings differ by {max_abs_diff:.2e} > {AGREEMENT_TOLERANCE:g}: "
            f"the two encoders are not computing the same thing, the timings are not comparable !!!\n",
            file=sys.stderr,
        )

    payload = {
        "model": str(model_path),
        "n": len(corpus),
        "batch_size": bs,
        "repeats": args.repeats,
        "seed": args.seed,
        "lang": args.lang,
        "threads": torch.get_num_threads(),
        "device": "cpu",
        "dtype": "float32",
        "max_seq_length": ours.max_seq_length,
        "embedding_dimension": int(a.shape[1]) if a.ndim == 2 else None,
        "warmup_sentences": len(warmup),
        "order": "alternating, munjang first",
        "results": results,
        "ratio_munjang_over_st": {"median": round(ratio_median, 4), "best": round(ratio_best, 4)},
        "max_abs_diff": max_abs_diff,
        "embeddings_agree": agree,
        "agreement_tolerance": AGREEMENT_TOLERANCE,
    }
    if not args.no_write:
        path = write_result("encode" if args.lang == "mixed" else f"encode-{args.lang}", payload, env=env)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
