"""The SBERT paper's pooling ablation on Korean data: mean vs cls vs max, same training, KorSTS dev Spearman.

Each run starts from multilingual-e5-small with the pooling replaced, trains one epoch on KorSTS train with
CosineSimilarityLoss (the paper's regression objective), and reports KorSTS dev Spearman before and after.
e5 was pre-trained with mean pooling, which favours mean before training; training shows how much each
strategy recovers.

    python bench/ablation_pooling.py                  # full KorSTS train, one epoch per mode
    python bench/ablation_pooling.py --limit 2880     # the first 2,880 pairs (180 steps) per mode
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import environment, print_environment, shared_data_dir, write_result
from munjang.data import read_sts, sts_examples
from munjang.evaluation import STSEvaluator
from munjang.losses import CosineSimilarityLoss
from munjang.training import Trainer, TrainingArguments

MODES = ("mean", "cls", "max")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--limit", type=int, default=0, help="train on the first N pairs (0: all)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    env = environment()
    print_environment(env)
    data = shared_data_dir()
    examples = sts_examples(read_sts(data / "korsts" / "sts-train.tsv.gz"))
    if args.limit:
        examples = examples[: args.limit]
    dev = STSEvaluator.from_data(
        read_sts(data / "korsts" / "sts-dev.tsv"),
        similarity_fns=("cosine",),
        prompt_name="query",
        batch_size=64,
    )
    results = {}
    for mode in MODES:
        model = munjang.load_encoder(args.model, device="cpu", pooling=mode)
        before = dev(model)["spearman_cosine"] * 100
        with tempfile.TemporaryDirectory() as out:
            training = TrainingArguments(
                output_dir=out,
                epochs=1,
                batch_size=args.batch_size,
                learning_rate=args.lr,
                seed=args.seed,
                prompt_name="query",
                freeze_word_embeddings=True,
                save_checkpoints=False,
                logging_steps=20,
            )
            start = time.perf_counter()
            Trainer(model, CosineSimilarityLoss(model), examples, args=training).train()
            seconds = time.perf_counter() - start
        after = dev(model)["spearman_cosine"] * 100
        results[mode] = {"dev_spearman_before": before, "dev_spearman_after": after, "train_seconds": seconds}
        print(f"{mode:>5}: KorSTS dev Spearman {before:.2f} -> {after:.2f} ({seconds:.0f} s)")
    print("\npooling  before  after")
    for mode, r in results.items():
        print(f"{mode:>7}  {r['dev_spearman_before']:6.2f} {r['dev_spearman_after']:6.2f}")
    write_result(
        "ablation_pooling",
        {"model": args.model, "examples": len(examples), "args": vars(args), "results": results},
        env=env,
    )


if __name__ == "__main__":
    main()
