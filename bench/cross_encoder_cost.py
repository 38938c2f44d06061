"""The SBERT paper's cost argument, measured here: find the most similar pair among N sentences.

- bi-encoder: encode the N sentences, one N x N cosine matrix, the best off-diagonal entry (all timed);
- cross-encoder: N(N-1)/2 pair passes; `--sample` random pairs are scored and timed, and the total is
  extrapolated from that rate (running 50 million pairs is the point the paper makes, not a test).

Both use the same backbone (multilingual-e5-small; the cross-encoder gets the SBERT head, its weights do
not change the cost) on Korean KorSTS sentences.

    python bench/cross_encoder_cost.py              # N = 1,000 and 10,000; writes cross_encoder_cost.json
    python bench/cross_encoder_cost.py --n 1000 --sample 500
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load_corpus, print_environment, write_result


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--sample", type=int, default=2000, help="pairs scored to measure the cross-encoder")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args(argv)
    import torch

    env = print_environment()
    import munjang

    encoder = munjang.load_encoder(args.model, device="cpu")
    cross = munjang.load_cross_encoder(args.model, device="cpu")
    bs = args.batch_size
    results = []
    for n in args.n:
        sentences = load_corpus(n, seed=0, lang="ko")
        encoder.encode(sentences[:64], batch_size=bs)  # warm-up
        start = time.perf_counter()
        vectors = encoder.encode(sentences, batch_size=bs, convert_to_tensor=True, normalize_embeddings=True)
        encode_seconds = time.perf_counter() - start
        scores = vectors @ vectors.T
        scores.fill_diagonal_(float("-inf"))
        best = int(torch.argmax(scores))
        bi_seconds = time.perf_counter() - start
        i, j = divmod(best, n)
        del scores

        rng = random.Random(n)
        sample = []
        while len(sample) < args.sample:
            a, b = rng.randrange(n), rng.randrange(n)
            if a != b:
                sample.append((sentences[a], sentences[b]))
        cross.predict(sample[:64], batch_size=bs)  # warm-up
        start = time.perf_counter()
        cross.predict(sample, batch_size=bs)
        sample_seconds = time.perf_counter() - start
        pairs_per_s = len(sample) / sample_seconds
        total_pairs = n * (n - 1) // 2
        cross_seconds = total_pairs / pairs_per_s
        row = {
            "n": n,
            "bi_encoder_seconds": bi_seconds,
            "bi_encoder_encode_seconds": encode_seconds,
            "cross_encoder_pairs": total_pairs,
            "cross_encoder_sample_pairs": len(sample),
            "cross_encoder_sample_seconds": sample_seconds,
            "cross_encoder_pairs_per_s": pairs_per_s,
            "cross_encoder_seconds_extrapolated": cross_seconds,
            "ratio_cross_over_bi": cross_seconds / bi_seconds,
            "most_similar_pair": [sentences[i], sentences[j]],
        }
        results.append(row)
        print(
            f"N={n:>6,}: bi-encoder {_duration(bi_seconds)} (encode + {n:,}x{n:,} matrix); "
            f"cross-encoder {total_pairs:,} pairs at {pairs_per_s:.0f} pairs/s = {_duration(cross_seconds)} "
            f"(x{cross_seconds / bi_seconds:,.0f})"
        )
        print(f"          most similar pair: {sentences[i]!r} / {sentences[j]!r}")
    write_result(
        "cross_encoder_cost",
        {"model": args.model, "batch_size": bs, "language": "ko (KorSTS sentences)", "results": results},
        env=env,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
