"""Train a tiny model with CosineSimilarityLoss (or MNRL on triplets); under torchrun for DDP, or plainly.

torchrun --nproc_per_node 2 tests/helpers/scripts/ddp_worker.py MODEL OUT --batch-size 4 \
    [--loss mnrl [--no-gather]]
python tests/helpers/scripts/ddp_worker.py MODEL OUT --batch-size 8 [--loss mnrl]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# the repository, for tests.helpers (a script run by path sees only its own folder)
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.helpers.training import pair_examples

import munjang
from munjang.losses import CosineSimilarityLoss, MultipleNegativesRankingLoss
from munjang.training import Example, Trainer, TrainingArguments


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--loss", choices=["cosine", "mnrl"], default="cosine")
    parser.add_argument("--examples", type=int, default=48)
    parser.add_argument("--no-gather", action="store_true", help="MNRL: each process keeps its own negatives")
    args = parser.parse_args()
    encoder = munjang.load_encoder(args.model, device="cpu")
    training = TrainingArguments(
        output_dir=args.out,
        epochs=2,
        batch_size=args.batch_size,
        learning_rate=1e-3,
        logging_steps=1,
        show_progress_bar=False,
        seed=3,
    )
    pairs = pair_examples(args.examples)
    if args.loss == "cosine":
        Trainer(encoder, CosineSimilarityLoss(encoder), pairs, args=training).train()
        return
    # (anchor, positive, hard negative): the next pair's second text is the negative
    triplets = [
        Example((ex.texts[0], ex.texts[1], pairs[(i + 1) % len(pairs)].texts[1]))
        for i, ex in enumerate(pairs)
    ]
    loss = MultipleNegativesRankingLoss(encoder, gather_across_devices=not args.no_gather)
    Trainer(encoder, loss, triplets, args=training).train()


if __name__ == "__main__":
    main()
