"""LLM reranker speed: munjang vs sentence-transformers on a Qwen3-Reranker-0.6B-shaped model (random
weights, fewer layers at the real width: see llm_shapes.py), reranking 100 Korean passages per query.

    python bench/llm_rerank.py                          # 4 of 28 layers, 2 queries x 100 passages
    python bench/llm_rerank.py --layers 28 --queries 1  # the full depth (slow on a small CPU)

Each configuration runs in a fresh process (so its peak RSS is its own), in rounds that alternate
the configurations so drift in the machine's speed falls on all alike; pairs/s is the median over
rounds. Configurations: each library's default (torch fp32), torch with bf16 weights, munjang's
OpenVINO graph (the decoder and the two scored head rows) at f32 and bf16 (bf16 where the CPU has
bf16 instructions), and "munjang auto" (the fastest of torch fp32 / OpenVINO fp32 / bf16 whose scores
stay torch fp32's, measured in the warm-up, outside the timing; `ran_on` says what it chose);
sentence-transformers' own ONNX / OpenVINO backends need `optimum` (not measured). Accuracy beside
speed: the largest log-odds difference to sentence-transformers fp32 and the agreement of the top 10.
Passages are AutoRAG-ko pages cut to `--chars` characters (a typical retrieval chunk), the queries its
questions.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, shared_data_dir, write_result
from llm_shapes import build_reranker

CONFIGS = (
    "munjang torch:fp32",
    "sentence-transformers torch:fp32",
    "munjang openvino:fp32",
    "munjang torch:bf16",
    "sentence-transformers torch:bf16",
    "munjang openvino:bf16",
)
REFERENCE = "sentence-transformers torch:fp32"


def peak_rss_bytes() -> int:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, not inherited across exec)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def score_in_child(
    folder: str, config: str, pairs: list[tuple[str, str]], batch: int, threads: int
) -> dict[str, Any]:
    """One timed pass over `pairs` in this (fresh) process: raw log-odds, seconds, peak RSS."""
    import logging

    import torch

    torch.set_num_threads(threads)
    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    library, setting = config.split()
    backend, precision = setting.split(":") if ":" in setting else (setting, "fp32")
    dtype = torch.bfloat16 if precision == "bf16" and backend == "torch" else torch.float32
    raw = torch.nn.Identity()
    if library == "munjang":
        import munjang

        model = munjang.load_cross_encoder(folder, device="cpu", dtype=dtype)
        if backend in ("openvino", "auto"):
            model.set_backend(backend, precision, threads=threads)

        def run(items: list[tuple[str, str]]) -> np.ndarray:
            return np.asarray(model.predict(items, batch_size=batch, activation=raw, show_progress_bar=False))
    else:
        from sentence_transformers import CrossEncoder

        st = CrossEncoder(folder, device="cpu", model_kwargs={"dtype": dtype})

        def run(items: list[tuple[str, str]]) -> np.ndarray:
            return np.asarray(st.predict(items, batch_size=batch, activation_fn=raw, show_progress_bar=False))

    started = time.perf_counter()
    run(pairs[:batch])  # warm-up: kernels, allocator, the OpenVINO graph's conversion, auto's measurement
    first = time.perf_counter() - started
    started = time.perf_counter()
    scores = run(pairs)
    seconds = time.perf_counter() - started
    peak = peak_rss_bytes()
    ran_on = "{}:{}".format(*model.configuration()) if library == "munjang" else setting
    return {
        "seconds": seconds,
        "scores": scores.astype(np.float64).tolist(),
        "peak_rss_bytes": peak,
        "first_call_seconds": first,
        "ran_on": ran_on,
    }


def load_pairs(queries: int, passages: int, chars: int) -> tuple[list[str], list[str]]:
    import pandas as pd

    folder = shared_data_dir() / "autorag-ko"
    pages = pd.read_parquet(folder / "ocr_corpus_v3.parquet")["contents"].tolist()
    questions = pd.read_parquet(folder / "qa_v4.parquet")["query"].tolist()
    rng = np.random.default_rng(0)
    chosen = [pages[i][:chars] for i in rng.choice(len(pages), size=passages, replace=False)]
    return [str(q) for q in questions[:queries]], chosen


def top_overlap(a: np.ndarray, b: np.ndarray, per_query: int, k: int = 10) -> float:
    """Mean share of the top k that two score vectors agree on, per query."""
    shares = []
    for start in range(0, len(a), per_query):
        top_a = set(np.argsort(-a[start : start + per_query])[:k].tolist())
        top_b = set(np.argsort(-b[start : start + per_query])[:k].tolist())
        shares.append(len(top_a & top_b) / k)
    return float(np.mean(shares))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--queries", type=int, default=2)
    parser.add_argument("--passages", type=int, default=100)
    parser.add_argument("--chars", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    args = parser.parse_args(argv)
    env = print_environment()
    queries, passages = load_pairs(args.queries, args.passages, args.chars)
    pairs = [(q, p) for q in queries for p in passages]
    configs = [c.strip() for c in args.configs.split(",")]
    spawn = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        texts = passages + queries + [p[:80] for p in passages]
        folder = build_reranker(Path(tmp) / "reranker", args.layers, texts)
        import munjang

        tokens = munjang.load_cross_encoder(folder, device="cpu").encode_pairs(
            [q for q, _ in pairs], [p for _, p in pairs], prompt=None
        )
        mean_tokens = float(np.mean([len(ids) for ids in tokens["input_ids"]]))
        shape = f"{args.queries} queries x {args.passages} passages"
        print(f"{len(pairs)} pairs ({shape}), {mean_tokens:.0f} tokens per pair")
        runs: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
        for round_ in range(args.rounds):
            for config in configs:
                with spawn.Pool(1) as pool:
                    out = pool.apply(
                        score_in_child, (str(folder), config, pairs, args.batch_size, args.threads)
                    )
                runs[config].append(out)
                rate = len(pairs) / out["seconds"]
                peak = out["peak_rss_bytes"] / 2**20
                print(f"  round {round_ + 1} {config:<34} {rate:7.2f} pairs/s  peak RSS {peak:,.0f} MiB")
    reference = np.asarray(runs[REFERENCE if REFERENCE in runs else configs[0]][-1]["scores"])
    results: dict[str, Any] = {}
    for config, outs in runs.items():
        scores = np.asarray(outs[-1]["scores"])
        results[config] = {
            "pairs_per_s": round(statistics.median(len(pairs) / o["seconds"] for o in outs), 2),
            "seconds": [round(o["seconds"], 3) for o in outs],
            "peak_rss_mib": round(max(o["peak_rss_bytes"] for o in outs) / 2**20),
            "max_abs_logodds_diff_vs_st_fp32": float(np.abs(scores - reference).max()),
            "top10_agreement_vs_st_fp32": top_overlap(scores, reference, args.passages),
            "first_call_seconds": round(outs[0]["first_call_seconds"], 1),
            "ran_on": outs[-1]["ran_on"],
        }
    for config, r in results.items():
        diff, top = r["max_abs_logodds_diff_vs_st_fp32"], r["top10_agreement_vs_st_fp32"]
        print(f"{config:<34} {r['pairs_per_s']:7.2f} pairs/s  {r['peak_rss_mib']:6,} MiB  "
              f"max |Δ| {diff:.2e}  top-10 {top:.2f}")  # fmt: skip
    ratios = {}
    for config, r in results.items():
        library, setting = config.split()
        theirs = results.get(f"sentence-transformers torch:{setting.split(':')[-1]}")
        if library == "munjang" and theirs:
            ratios[setting] = round(r["pairs_per_s"] / theirs["pairs_per_s"], 3)
    print(f"munjang / sentence-transformers at the same precision, pairs/s: {ratios}")
    write_result(
        f"llm_rerank_{args.layers}l",
        {
            "model": f"Qwen3-Reranker-0.6B configuration, random weights, {args.layers} of 28 layers",
            "tokenizer": "byte-level BPE (32k) trained on the benchmark texts",
            "queries": args.queries,
            "passages_per_query": args.passages,
            "passage_chars": args.chars,
            "mean_tokens_per_pair": round(mean_tokens, 1),
            "batch_size": args.batch_size,
            "threads": args.threads,
            "rounds": args.rounds,
            "results": results,
            "ratio_munjang_over_st": ratios,
        },
        env=env,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
