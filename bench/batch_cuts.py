"""Where to cut length-sorted batches: the least-waste cut (munjang's default) against a greedy fill.

Both sort by exact token count, longest first, under the same budget (2,048 padded tokens, 256
rows). The greedy fill packs each batch as full as the budget allows; the least-waste cut
(`token_budget_batches`) chooses the cuts that minimise padded tokens + `batch_cost` per batch.
Reported, for each policy: sentences/s encoding the corpus (rounds alternate between policies in
one process, median shown), the padding share and the number of batches; and the same on a
"server" workload, the corpus cut into 128-sentence pools of unrelated sentences.

    python bench/batch_cuts.py                       # MiniLM, fp32 and bf16, 10,000 English sentences
    python bench/batch_cuts.py --precisions bf16 --rounds 5
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load_corpus, print_environment, write_result


def greedy_batches(
    lengths: Any, max_tokens: int | None = None, max_rows: int | None = None, batch_cost: int = 0
) -> list[np.ndarray]:
    """The policy before the least-waste cut: fill each batch up to the budget."""
    sizes = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-sizes, kind="stable")
    batches, start = [], 0
    while start < len(order):
        rows = len(order) - start
        if max_rows is not None:
            rows = min(rows, max_rows)
        if max_tokens is not None:
            rows = max(1, min(rows, max_tokens // max(int(sizes[order[start]]), 1)))
        batches.append(order[start : start + rows])
        start += rows
    return batches


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None)
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    env = print_environment()
    import munjang
    import munjang.encoders.dense.encoder as encoder_module
    from munjang.encoders.dense.encoder import DEFAULT_MAX_ROWS, DEFAULT_MAX_TOKENS
    from munjang.inference import padding_fraction, token_budget_batches

    policies = {"greedy fill": greedy_batches, "least-waste cut": token_budget_batches}
    corpus = load_corpus(args.n, seed=0, lang="en")
    shuffled = corpus[:]
    random.Random(0).shuffle(shuffled)
    results: dict[str, Any] = {}
    for precision in args.precisions.split(","):
        enc = munjang.load_encoder(args.model, device="cpu", precision=precision)
        enc.warmup()
        lengths = np.array([len(ids) for ids in enc.token_ids(corpus)[0]["input_ids"]])
        pools = [enc.token_ids(shuffled[i : i + 128])[0] for i in range(0, min(len(shuffled), 4096), 128)]
        pooled = sum(len(p["input_ids"]) for p in pools)
        speed: dict[str, dict[str, list[float]]] = {name: {"corpus": [], "pools": []} for name in policies}
        for _ in range(args.rounds):
            for name, policy in policies.items():
                encoder_module.token_budget_batches = policy  # what encode() calls
                t0 = time.perf_counter()
                enc.encode(corpus, show_progress_bar=False)
                speed[name]["corpus"].append(len(corpus) / (time.perf_counter() - t0))
                t0 = time.perf_counter()
                for pool in pools:
                    enc.encode_tokenized(pool)
                speed[name]["pools"].append(pooled / (time.perf_counter() - t0))
        encoder_module.token_budget_batches = token_budget_batches
        results[precision] = {}
        for name, policy in policies.items():
            batches = policy(lengths, DEFAULT_MAX_TOKENS, DEFAULT_MAX_ROWS)
            row = {
                "corpus_sentences_per_s": round(statistics.median(speed[name]["corpus"]), 1),
                "pools_sentences_per_s": round(statistics.median(speed[name]["pools"]), 1),
                "corpus_rounds": [round(x, 1) for x in speed[name]["corpus"]],
                "pools_rounds": [round(x, 1) for x in speed[name]["pools"]],
                "padding": round(padding_fraction(lengths, batches), 4),
                "batches": len(batches),
            }
            results[precision][name] = row
            print(
                f"{precision:<5} {name:<16} corpus {row['corpus_sentences_per_s']:7.1f}/s  "
                f"128-pools {row['pools_sentences_per_s']:7.1f}/s  padding {row['padding']:.1%}  "
                f"batches {row['batches']}"
            )
        base, new = results[precision]["greedy fill"], results[precision]["least-waste cut"]
        results[precision]["ratio_corpus"] = round(
            new["corpus_sentences_per_s"] / base["corpus_sentences_per_s"], 3
        )
        results[precision]["ratio_pools"] = round(
            new["pools_sentences_per_s"] / base["pools_sentences_per_s"], 3
        )
        print(
            f"{precision:<5} least-waste / greedy: corpus {results[precision]['ratio_corpus']}x, "
            f"128-pools {results[precision]['ratio_pools']}x"
        )
    if not args.no_write:
        payload = {"model": args.model or "all-MiniLM-L6-v2 (embedded)", "n": args.n, "results": results}
        print(f"wrote {write_result('batch_cuts', payload, env=env)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
