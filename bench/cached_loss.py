"""Memory and speed of GradCache: MultipleNegativesRankingLoss vs CachedMultipleNegativesRankingLoss,
munjang and sentence-transformers, at one large batch.

multilingual-e5-small, (premise, entailed hypothesis) pairs from KLUE-NLI train (Korean), batch 256,
max_seq_length 64, mini-batch 32 for the cached losses, AdamW (lr 2e-5), train mode (dropout on),
fp32 on CPU. Each configuration runs in a process of its own, a few optimizer steps on the same
batches. Reported per configuration: seconds per step (tokenizing, loss, backward, optimizer step;
median of the steps and each step), steps/s, and the peak resident memory (RSS) the steps add:
Linux's VmHWM after the steps minus the RSS before them, the high-water mark being reset
(/proc/self/clear_refs) once the model, the batch's texts and the optimizer's state are in memory,
so the figure is the activations, the gradients and the loss's own buffers.

    nice python bench/cached_loss.py                      # 3 steps each, all four configurations
    nice python bench/cached_loss.py --batch 64 --configs munjang-cached st-cached --name cached_loss-b64
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import environment, print_environment, shared_data_dir, write_result

CONFIGS = ("munjang-mnrl", "munjang-cached", "st-cached", "st-mnrl")
MODEL = "multilingual-e5-small"


def entailment_pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """`count` (premise, entailed hypothesis) pairs of KLUE-NLI train, shuffled with `seed`."""
    path = shared_data_dir() / "klue-nli" / "klue-nli-train.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    pairs = [(r["premise"], r["hypothesis"]) for r in rows if r["label"] == "entailment"]
    random.Random(seed).shuffle(pairs)
    if len(pairs) < count:
        raise ValueError(f"KLUE-NLI has {len(pairs)} entailment pairs, fewer than the {count} needed")
    return pairs[:count]


def _status(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")  # resets VmHWM to the current RSS


def _build(config: str, max_seq_length: int, mini_batch: int) -> tuple[Any, Any, Any]:
    """The model, the loss and a function from a column's texts to its features."""
    from munjang.models.hub import resolve_model_path

    folder = resolve_model_path(MODEL)
    if config.startswith("munjang"):
        import munjang
        from munjang.losses import CachedMultipleNegativesRankingLoss, MultipleNegativesRankingLoss

        model = munjang.load_encoder(folder, device="cpu")
        model.max_seq_length = max_seq_length
        loss = (
            CachedMultipleNegativesRankingLoss(model, mini_batch_size=mini_batch)
            if config == "munjang-cached"
            else MultipleNegativesRankingLoss(model)
        )
        return model, loss, model.tokenize
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import losses

    st_model = SentenceTransformer(str(folder), device="cpu")
    st_model.max_seq_length = max_seq_length
    st_loss = (
        losses.CachedMultipleNegativesRankingLoss(st_model, mini_batch_size=mini_batch)
        if config == "st-cached"
        else losses.MultipleNegativesRankingLoss(st_model)
    )
    preprocess = getattr(st_model, "preprocess", None) or st_model.tokenize
    return st_model, st_loss, lambda texts: preprocess(list(texts))


def worker(config: str, args: argparse.Namespace) -> dict[str, Any]:
    """Train `args.steps` steps of `config`; the timings and memory, as a dict."""
    import torch

    torch.manual_seed(0)
    pairs = entailment_pairs(args.batch * args.steps)
    model, loss, features = _build(config, args.max_seq_length, args.mini_batch)
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-5)
    for param in model.parameters():  # allocate AdamW's state now, so it is not counted as the step's
        param.grad = torch.zeros_like(param)
    for group in optimizer.param_groups:
        group["lr"] = 0.0
    optimizer.step()
    for group in optimizer.param_groups:
        group["lr"] = 2e-5
    optimizer.zero_grad(set_to_none=True)
    before = _status("VmRSS")
    _reset_peak()
    seconds, values = [], []
    for step in range(args.steps):
        batch = pairs[step * args.batch : (step + 1) * args.batch]
        start = time.perf_counter()
        columns = [features([a for a, _ in batch]), features([b for _, b in batch])]
        value = loss(columns, None)
        value.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        seconds.append(time.perf_counter() - start)
        values.append(float(value.detach()))
        print(f"  {config}: step {step + 1} {seconds[-1]:.1f} s, loss {values[-1]:.4f}", file=sys.stderr)
    peak = _status("VmHWM")
    median = statistics.median(seconds)
    return {
        "seconds_per_step": median,
        "steps_per_second": 1 / median,
        "step_seconds": seconds,
        "losses": values,
        "rss_before_steps_mb": before / 2**20,
        "peak_rss_delta_mb": (peak - before) / 2**20,
        "threads": torch.get_num_threads(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--mini-batch", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--configs", nargs="+", choices=CONFIGS, default=list(CONFIGS))
    parser.add_argument("--name", default="cached_loss", help="result file name (bench/results/NAME.json)")
    parser.add_argument("--worker", choices=CONFIGS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args)))
        return

    env = print_environment(environment())
    passed = ["--batch", str(args.batch), "--mini-batch", str(args.mini_batch)]
    passed += ["--max-seq-length", str(args.max_seq_length), "--steps", str(args.steps)]
    results: dict[str, Any] = {}
    for config in args.configs:
        done = subprocess.run(
            [sys.executable, __file__, "--worker", config, *passed], capture_output=True, text=True
        )
        if done.returncode:  # out of memory on a shared machine, say: keep the other configurations
            sys.stderr.write(done.stderr[-2000:])
            results[config] = {"failed": f"exit {done.returncode}"}
            print(f"{config:<15} failed (exit {done.returncode})")
            continue
        results[config] = json.loads(done.stdout.strip().splitlines()[-1])
        r = results[config]
        print(
            f"{config:<15} {r['seconds_per_step']:7.1f} s/step  {r['steps_per_second']:.4f} steps/s  "
            f"peak RSS +{r['peak_rss_delta_mb']:,.0f} MB  losses {', '.join(f'{v:.3f}' for v in r['losses'])}"
        )
    payload = {
        "model": MODEL,
        "data": "KLUE-NLI train, (premise, entailed hypothesis) pairs",
        "batch_size": args.batch,
        "mini_batch_size": args.mini_batch,
        "max_seq_length": args.max_seq_length,
        "steps": args.steps,
        "memory": "peak RSS delta: VmHWM after the steps minus VmRSS before them (high-water mark reset "
        "once the model, texts and AdamW state were loaded); one process per configuration",
        "note": "timings taken on a busy shared machine (2 cores, other jobs running): compare "
        "configurations within this run only",
        "results": results,
    }
    print(f"\nwrote {write_result(args.name, payload, env)}")


if __name__ == "__main__":
    main()
