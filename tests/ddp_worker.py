"""Train a tiny model with CosineSimilarityLoss; run under torchrun for DDP or plainly for one process.

torchrun --nproc_per_node 2 tests/ddp_worker.py MODEL OUT --batch-size 4
python tests/ddp_worker.py MODEL OUT --batch-size 8
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from munjang.losses import CosineSimilarityLoss
from munjang.training import Trainer, TrainingArguments
from training_helpers import pair_examples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--batch-size", type=int, required=True)
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
    Trainer(encoder, CosineSimilarityLoss(encoder), pair_examples(48), args=training).train()


if __name__ == "__main__":
    main()
