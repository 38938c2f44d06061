"""Fine-tune an English bi-encoder on STSb train, to serve as the teacher for Korean students.

    python bench/train_stsb_teacher.py         # embedded all-MiniLM-L6-v2 -> runs/stsb-minilm

KorSTS is STSb translated row by row, so an English model fine-tuned on STSb scores the English side of
any pair of KorSTS sentences. `bench/train_korsts.py --silver-teacher` uses it to label extra Korean pairs
(Augmented SBERT with the labels carried across the translation). Reports STSb dev and test Spearman
before and after.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import environment, print_environment, shared_data_dir, training_arguments, write_result
from munjang.data import read_sts
from munjang.evaluation import STSEvaluator
from munjang.losses import CoSENTLoss, CosineSimilarityLoss
from munjang.models.hub import embedded_default_path
from munjang.training import Example, Trainer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="English bi-encoder (default: the embedded model)")
    parser.add_argument("--loss", choices=("cosent", "cosine"), default="cosent")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--eval-steps", type=int, default=360)
    parser.add_argument("--output-dir", default="runs/stsb-minilm")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--name", default="train_stsb_teacher", help="result file name under bench/results")
    args = parser.parse_args(argv)

    env = environment()
    print_environment(env)
    data = shared_data_dir() / "stsb"
    train = read_sts(data / "sts-train.csv")
    dev = read_sts(data / "sts-dev.csv")
    test = read_sts(data / "sts-test.csv")
    examples = [
        Example((a, b), s / 5.0)
        for a, b, s in zip(train.sentences1, train.sentences2, train.scores, strict=True)
    ]

    def evaluator(pairs):
        return STSEvaluator.from_data(pairs, similarity_fns=("cosine",), batch_size=64)

    def spearman(encoder: munjang.SentenceEncoder) -> dict[str, float]:
        splits = {"dev": dev, "test": test}
        return {name: evaluator(d)(encoder)["spearman_cosine"] * 100 for name, d in splits.items()}

    model_path = args.model or str(embedded_default_path())
    model = munjang.load_encoder(model_path, device="cpu")
    before = {
        split: evaluator(d)(model)["spearman_cosine"] * 100 for split, d in (("dev", dev), ("test", test))
    }
    print(f"STSb Spearman before: {before}")
    loss = CoSENTLoss(model) if args.loss == "cosent" else CosineSimilarityLoss(model)
    training_args = training_arguments(args)
    trainer = Trainer(
        model,
        loss,
        examples,
        evaluator(dev),
        training_args,
        data_description={"train": f"STSb sts-train.csv ({len(examples):,} pairs, scores / 5)"},
    )
    start = time.perf_counter()
    summary = trainer.train()
    wall = time.perf_counter() - start
    best = munjang.load_encoder(Path(args.output_dir) / "best", device="cpu")
    after = {
        split: evaluator(d)(best)["spearman_cosine"] * 100 for split, d in (("dev", dev), ("test", test))
    }
    curve = [json.loads(line) for line in (Path(args.output_dir) / "metrics.jsonl").read_text().splitlines()]
    print(f"STSb Spearman: before {before}, after (best on dev) {after}")
    print(f"wall time {wall:.0f} s, {summary['global_step']} steps; teacher in {args.output_dir}/best")
    write_result(
        args.name,
        {
            "model": model_path,
            "args": vars(args),
            "training_arguments": training_args.to_dict(),
            "stsb_spearman_before": before,
            "stsb_spearman_after_best": after,
            "best_step": summary["best_step"],
            "steps": summary["global_step"],
            "wall_seconds": wall,
            "curve": curve,
        },
        env=env,
    )


if __name__ == "__main__":
    main()
