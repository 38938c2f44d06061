"""Cross-encoder `predict` throughput: munjang vs sentence-transformers' CrossEncoder, same saved model, same
pairs, one process, runs alternated. Prints pairs/s for each, the munjang/ST ratio and the largest score
difference.

    python bench/cross_encoder_speed.py                 # e5-small + SBERT head, KorSTS+STSb test pairs
    python bench/cross_encoder_speed.py --model runs/ce-korsts-e5/best --repeats 5

Without --model, a cross-encoder is built from multilingual-e5-small with a new head and saved to a
temporary folder (throughput does not depend on the weights).
"""

from __future__ import annotations

import argparse
import gc
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, shared_data_dir, write_result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="saved cross-encoder folder (default: e5-small + new head)")
    parser.add_argument("--base", default="multilingual-e5-small")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int)
    args = parser.parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    env = print_environment()
    logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
    from sentence_transformers import CrossEncoder as STCrossEncoder

    import munjang
    from munjang.data import read_sts

    data = shared_data_dir()
    korean = read_sts(data / "korsts" / "sts-test.tsv")
    english = read_sts(data / "stsb" / "sts-test.csv")
    pairs = list(zip(korean.sentences1, korean.sentences2, strict=True))
    pairs += list(zip(english.sentences1, english.sentences2, strict=True))

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.model) if args.model else Path(tmp) / "ce"
        if not args.model:
            munjang.load_cross_encoder(args.base, device="cpu").save(folder)
        ours = munjang.load_cross_encoder(folder, device="cpu")
        theirs = STCrossEncoder(str(folder), device="cpu")
        bs = args.batch_size

        def run_ours() -> np.ndarray:
            return np.asarray(ours.predict(pairs, batch_size=bs, show_progress_bar=False))

        def run_theirs() -> np.ndarray:
            return np.asarray(theirs.predict(pairs, batch_size=bs, show_progress_bar=False))

        ours.predict(pairs[:64], batch_size=bs)
        theirs.predict(pairs[:64], batch_size=bs, show_progress_bar=False)
        times: dict[str, list[float]] = {"munjang": [], "sentence-transformers": []}
        outputs: dict[str, np.ndarray] = {}
        print(f"model {folder}; {len(pairs)} pairs, batch {bs}, threads {torch.get_num_threads()}")
        for i in range(args.repeats):
            for name, fn in (("munjang", run_ours), ("sentence-transformers", run_theirs)):
                gc.collect()
                start = time.perf_counter()
                outputs[name] = fn()
                seconds = time.perf_counter() - start
                times[name].append(seconds)
                rate = len(pairs) / seconds
                print(f"  run {i + 1}/{args.repeats} {name:<22} {seconds:8.2f} s  {rate:8.1f} pairs/s")
    diff = float(np.abs(outputs["munjang"] - outputs["sentence-transformers"]).max())
    ratio_median = statistics.median(times["sentence-transformers"]) / statistics.median(times["munjang"])
    ratio_best = min(times["sentence-transformers"]) / min(times["munjang"])
    print(f"munjang / ST throughput: median {ratio_median:.3f}, best {ratio_best:.3f}; max |diff| {diff:.2e}")
    write_result(
        "cross_encoder_speed",
        {
            "model": str(args.model or f"{args.base} + new SBERT head"),
            "pairs": len(pairs),
            "pair_source": "KorSTS sts-test.tsv + STSb sts-test.csv",
            "batch_size": bs,
            "repeats": args.repeats,
            "munjang": {
                "times_s": times["munjang"],
                "median_pairs_per_s": len(pairs) / statistics.median(times["munjang"]),
            },
            "sentence-transformers": {
                "times_s": times["sentence-transformers"],
                "median_pairs_per_s": len(pairs) / statistics.median(times["sentence-transformers"]),
            },
            "ratio_munjang_over_st": {"median": ratio_median, "best": ratio_best},
            "max_abs_score_difference": diff,
        },
        env=env,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
