"""Train a cross-encoder from multilingual-e5-small on KorSTS train; report KorSTS test Spearman before and
after, beside the bi-encoder trained on the same data (bench/results/train_korsts.json).

    python bench/cross_encoder_korsts.py                     # writes bench/results/cross_encoder_korsts.json
    python bench/cross_encoder_korsts.py --epochs 1 --limit 800   # a quick check
    python bench/cross_encoder_korsts.py --init runs/ce-klue-nli-e5/final --mixed-precision bf16 \
        --output-dir runs/ce-nli-korsts-e5 --name cross_encoder_nli_korsts   # NLI -> KorSTS, the paper's path

The head is the SBERT one on [CLS] (dropout -> dense -> GELU -> dropout -> 1 logit), trained with
BinaryCrossEntropyLoss on score / 5, as the SBERT cross-encoders were trained on STSb. The best model on
KorSTS dev is kept in <output-dir>/best (bench/rerank_korsts.py uses it). `--init` starts from a
cross-encoder trained on NLI (bench/cross_encoder_nli.py): its encoder, with a new one-label head.
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
from munjang.encoders.cross.evaluation import CrossEncoderCorrelationEvaluator
from munjang.encoders.cross.losses import BinaryCrossEntropyLoss, MSELoss
from munjang.training import Example, Trainer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--loss", choices=("bce", "mse"), default="bce")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--eval-steps", type=int, default=180)
    parser.add_argument("--limit", type=int, default=0, help="train on the first N pairs only (0: all)")
    parser.add_argument("--output-dir", default="runs/ce-korsts-e5")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--init", help="a cross-encoder folder to start from (its head is replaced)")
    parser.add_argument("--mixed-precision", default="no", help="no or bf16 (autocast)")
    parser.add_argument("--name", default="cross_encoder_korsts", help="result file name")
    args = parser.parse_args(argv)

    env = environment()
    print_environment(env)
    data = shared_data_dir()
    train = read_sts(data / "korsts" / "sts-train.tsv.gz")
    dev = read_sts(data / "korsts" / "sts-dev.tsv")
    test = read_sts(data / "korsts" / "sts-test.tsv")
    examples = [
        Example((a, b), s / 5.0)
        for a, b, s in zip(train.sentences1, train.sentences2, train.scores, strict=True)
    ]
    if args.limit:
        examples = examples[: args.limit]

    def evaluator(pairs, name: str) -> CrossEncoderCorrelationEvaluator:
        return CrossEncoderCorrelationEvaluator.from_data(pairs, name=name, batch_size=64)

    if args.init:
        model = munjang.load_cross_encoder(args.init, head="seeds", num_labels=1, device="cpu")
    else:
        model = munjang.load_cross_encoder(args.model, device="cpu")
    before = evaluator(test, "test")(model)["spearman"] * 100
    print(f"KorSTS test Spearman before training (new head): {before:.2f}")
    loss = BinaryCrossEntropyLoss(model) if args.loss == "bce" else MSELoss(model, activation="model")
    training_args = training_arguments(args, mixed_precision=args.mixed_precision)
    trainer = Trainer(
        model,
        loss,
        examples,
        evaluator(dev, "dev"),
        training_args,
        data_description={"train": f"KorSTS sts-train.tsv ({len(examples):,} pairs, scores / 5)"},
    )
    start = time.perf_counter()
    summary = trainer.train(resume_from_checkpoint=args.resume or None)
    wall = time.perf_counter() - start
    best = munjang.load_cross_encoder(Path(args.output_dir) / "best", device="cpu")
    after_best = evaluator(test, "test")(best)["spearman"] * 100
    after_final = evaluator(test, "test")(model)["spearman"] * 100
    curve = [json.loads(line) for line in (Path(args.output_dir) / "metrics.jsonl").read_text().splitlines()]
    bi_file = Path(__file__).resolve().parent / "results" / "train_korsts.json"
    bi = json.loads(bi_file.read_text()) if bi_file.exists() else {}
    print(
        f"cross-encoder KorSTS test Spearman: before {before:.2f}, after (best on dev) {after_best:.2f}, "
        f"final {after_final:.2f}; wall {wall:.0f} s, {summary['global_step']} steps"
    )
    if bi:
        bi_score = bi["korsts_test_spearman_after_best"]
        print(f"bi-encoder on the same data (bench/train_korsts.py): {bi_score:.2f}")
    write_result(
        args.name,
        {
            "model": args.init or args.model,
            "args": vars(args),
            "training_arguments": training_args.to_dict(),
            "korsts_test_spearman_before": before,
            "korsts_test_spearman_after_best": after_best,
            "korsts_test_spearman_after_final": after_final,
            "best_dev_spearman": summary["best_metric"],
            "best_step": summary["best_step"],
            "steps": summary["global_step"],
            "wall_seconds": wall,
            "bi_encoder_same_data": {
                "source": "bench/results/train_korsts.json",
                "korsts_test_spearman_after_best": bi.get("korsts_test_spearman_after_best"),
                "best_dev_spearman": bi.get("best_dev_spearman"),
            },
            "curve": curve,
        },
        env=env,
    )


if __name__ == "__main__":
    main()
