"""The SBERT paper's concatenation ablation for SoftmaxLoss, on Korean NLI.

multilingual-e5-small is trained with SoftmaxLoss on KorNLI xnli.dev (2,490 pairs, the only Korean NLI
training data here) with the classifier input (u, v), (u, v, |u-v|) or (u, v, |u-v|, u*v), then the
classifier's accuracy is measured on xnli.test.ko (5,010 pairs).

    python bench/ablation_concat.py
    python bench/ablation_concat.py --epochs 2
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import environment, print_environment, shared_data_dir, write_result
from munjang.data import nli_pair_examples, read_nli
from munjang.evaluation import LabelAccuracyEvaluator
from munjang.losses import SoftmaxLoss
from munjang.training import Trainer, TrainingArguments

VARIANTS = {
    "(u, v)": {"concatenation_sentence_difference": False},
    "(u, v, |u-v|)": {},
    "(u, v, |u-v|, u*v)": {"concatenation_sentence_multiplication": True},
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    env = environment()
    print_environment(env)
    data = shared_data_dir() / "kornli"
    train = nli_pair_examples(read_nli(data / "xnli.dev.ko.tsv"))
    test = read_nli(data / "xnli.test.ko.tsv.gz")
    results = {}
    for name, options in VARIANTS.items():
        model = munjang.load_encoder(args.model, device="cpu")
        loss = SoftmaxLoss(model, num_labels=3, **options)
        with tempfile.TemporaryDirectory() as out:
            training = TrainingArguments(
                output_dir=out,
                epochs=args.epochs,
                batch_size=args.batch_size,
                learning_rate=args.lr,
                seed=args.seed,
                prompt_name="query",
                freeze_word_embeddings=True,
                save_checkpoints=False,
                logging_steps=20,
            )
            start = time.perf_counter()
            Trainer(model, loss, train, args=training).train()
            seconds = time.perf_counter() - start
        head = loss

        def classify(u: torch.Tensor, v: torch.Tensor, head: SoftmaxLoss = head) -> torch.Tensor:
            return head.classifier(head.classifier_input(u, v))

        evaluator = LabelAccuracyEvaluator.from_nli(test, classify, prompt_name="query", batch_size=64)
        metrics = evaluator(model)
        results[name] = {**metrics, "train_seconds": seconds}
        print(
            f"{name:>20}: accuracy {metrics['accuracy'] * 100:.2f}, macro-F1 {metrics['macro_f1'] * 100:.2f}"
        )
    print("\nclassifier input        accuracy  macro-F1")
    for name, r in results.items():
        print(f"{name:<22} {r['accuracy'] * 100:8.2f} {r['macro_f1'] * 100:9.2f}")
    write_result(
        "ablation_concat",
        {
            "model": args.model,
            "train_pairs": len(train),
            "test_pairs": len(test),
            "args": vars(args),
            "results": results,
        },
        env=env,
    )


if __name__ == "__main__":
    main()
