"""The static tier: a StaticEmbedding model distilled by munjang from multilingual-e5-small
(every vocabulary token through the model, PCA, Zipf weighting), against e5-small itself in the
same run: encode speed (sentences/s over a mixed Korean/English corpus, best of 2 rounds) and
Spearman × 100 on KorSTS test and STSb test (cosine).

    python bench/static_tier.py                 # writes bench/results/static_tier.json

The distilled model is kept in --out (default: ~/.cache/munjang/bench/e5-small-static-DIM) and reused.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import load_corpus, print_environment, shared_data_dir, write_result
from munjang.data import read_sts
from munjang.evaluation import STSEvaluator

MODEL = "multilingual-e5-small"


def speed(encoder: Any, corpus: list[str], **options: Any) -> float:
    """Sentences per second, best of 2 rounds (after a warm-up batch)."""
    encoder.encode(corpus[:64], **options)
    best = 0.0
    for _ in range(2):
        started = time.perf_counter()
        encoder.encode(corpus, **options)
        best = max(best, len(corpus) / (time.perf_counter() - started))
    return round(best, 1)


def sts(encoder: Any, path: Path, prompt_name: str | None) -> float:
    evaluator = STSEvaluator.from_data(read_sts(path), similarity_fns=("cosine",), prompt_name=prompt_name)
    return round(evaluator(encoder)["spearman_cosine"] * 100, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--sentences", type=int, default=4000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--name", default="static_tier")
    args = parser.parse_args(argv)
    env = print_environment()
    from munjang.training.static_distill import distill_static

    out = args.out or Path.home() / ".cache" / "munjang" / "bench" / f"e5-small-static-{args.dim}"
    teacher = munjang.load_encoder(MODEL)
    distill_s = None
    if (out / "modules.json").exists():
        static = munjang.load_encoder(str(out))
    else:
        started = time.perf_counter()
        static = distill_static(teacher, dim=args.dim)
        distill_s = round(time.perf_counter() - started, 1)
        static.save(str(out))
    corpus = load_corpus(args.sentences, seed=0, lang="mixed")
    data = shared_data_dir()
    rows: dict[str, Any] = {}
    for name, encoder, prompt in (("e5-small", teacher, "query"), ("static", static, None)):
        rows[name] = {
            "sentences_per_s": speed(encoder, corpus, prompt_name=prompt),
            "korsts_test": sts(encoder, data / "korsts" / "sts-test.tsv", prompt),
            "stsb_test": sts(encoder, data / "stsb" / "sts-test.csv", prompt),
        }
        print(name, rows[name], flush=True)
    ratio = round(rows["static"]["sentences_per_s"] / rows["e5-small"]["sentences_per_s"], 1)
    print(f"static / e5-small speed: {ratio}x; distilled in {distill_s} s" if distill_s else f"{ratio}x")
    path = write_result(
        args.name,
        {
            "teacher": MODEL,
            "dim": args.dim,
            "distill_seconds": distill_s,
            "speed_ratio": ratio,
            "results": rows,
        },
        env,
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
