"""Fine-tune a cross-encoder for reranking: binary relevance with hard negatives mined by a bi-encoder.

Training data from KorSTS *train* (the retrieval set of bench/rerank_korsts.py is built from *test* the
same way): each pair with gold score >= 4 gives a query (sentence1) and its relevant sentence (sentence2);
e5-small retrieves from all train sentence2, and the best-scoring ones that are not the positive and
score no higher than it (margin 0, a guard against unlabelled positives) become negatives. The
cross-encoder starts from the KorSTS regression model of bench/cross_encoder_korsts.py and learns
BinaryCrossEntropyLoss on (query, document, 1/0).

    python bench/cross_encoder_relevance.py        # writes runs/ce-relevance-e5/final and the JSON
    python bench/rerank_korsts.py --cross-encoder runs/ce-relevance-e5/final --name rerank_korsts_relevance
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import environment, print_environment, shared_data_dir, training_arguments, write_result
from munjang.data import read_sts
from munjang.encoders.cross.losses import BinaryCrossEntropyLoss
from munjang.training import Trainer, mine_hard_negatives


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default="multilingual-e5-small")
    parser.add_argument("--cross-encoder", default="runs/ce-korsts-e5/best")
    parser.add_argument("--negatives", type=int, default=4)
    parser.add_argument("--range-max", type=int, default=30)
    parser.add_argument("--margin", type=float, default=0.0)
    parser.add_argument("--min-score", type=float, default=4.0)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--output-dir", default="runs/ce-relevance-e5")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    env = environment()
    print_environment(env)

    train = read_sts(shared_data_dir() / "korsts" / "sts-train.tsv.gz")
    rows = [
        (a, b)
        for a, b, s in zip(train.sentences1, train.sentences2, train.scores, strict=True)
        if s >= args.min_score
    ]
    corpus = list(dict.fromkeys(train.sentences2))
    encoder = munjang.load_encoder(args.encoder, device="cpu")
    start = time.perf_counter()
    examples = mine_hard_negatives(
        encoder,
        [a for a, _ in rows],
        [b for _, b in rows],
        corpus,
        num_negatives=args.negatives,
        range_max=args.range_max,
        margin=args.margin,
        anchor_prompt_name="query",
        corpus_prompt_name="query",
        show_progress_bar=True,
    )
    mining_seconds = time.perf_counter() - start
    positives = sum(1 for e in examples if e.label == 1.0)
    print(f"{positives:,} positives, {len(examples) - positives:,} mined negatives ({mining_seconds:.0f} s)")

    model = munjang.load_cross_encoder(args.cross_encoder, device="cpu")
    training_args = training_arguments(args, save_checkpoints=False)
    start = time.perf_counter()
    summary = Trainer(
        model,
        BinaryCrossEntropyLoss(model),
        examples,
        None,
        training_args,
        data_description={"train": f"KorSTS train pairs with score >= {args.min_score} and mined negatives"},
    ).train()
    wall = time.perf_counter() - start
    print(f"trained {summary['global_step']} steps in {wall:.0f} s -> {args.output_dir}/final")
    write_result(
        "cross_encoder_relevance",
        {
            "args": vars(args),
            "queries": len(rows),
            "corpus": len(corpus),
            "positives": positives,
            "negatives": len(examples) - positives,
            "mining_seconds": mining_seconds,
            "steps": summary["global_step"],
            "wall_seconds": wall,
            "model": f"{args.output_dir}/final",
        },
        env=env,
    )


if __name__ == "__main__":
    main()
