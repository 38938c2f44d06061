"""Training speed: munjang's Trainer vs sentence-transformers' trainer, same model, loss, batch and data.

Both train all-MiniLM-L6-v2 with CosineSimilarityLoss on the same STSb-train pairs (scores / 5), batch 16,
one epoch, fp32 on CPU, no evaluation and no checkpoints, runs alternating. Reported: steps/s for each
(median over repeats) and the ratio munjang / sentence-transformers.

    python bench/train_speed.py                 # 1,600 pairs = 100 steps, 2 repeats
    python bench/train_speed.py --pairs 3200 --repeats 3
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import environment, print_environment, shared_data_dir, write_result
from munjang.data import read_sts
from munjang.losses import CosineSimilarityLoss
from munjang.models.hub import embedded_default_path
from munjang.training import Example, Trainer, TrainingArguments


def run_munjang(pairs: list[tuple[str, str, float]], batch_size: int, seed: int) -> float:
    model = munjang.load_encoder(embedded_default_path(), device="cpu")
    examples = [Example((a, b), s) for a, b, s in pairs]
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            epochs=1,
            batch_size=batch_size,
            learning_rate=2e-5,
            save_checkpoints=False,
            show_progress_bar=False,
            logging_steps=50,
            seed=seed,
        )
        trainer = Trainer(model, CosineSimilarityLoss(model), examples, args=args)
        start = time.perf_counter()
        trainer.train()
        return time.perf_counter() - start


def run_sentence_transformers(pairs: list[tuple[str, str, float]], batch_size: int, seed: int) -> float:
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, losses
    from sentence_transformers.training_args import SentenceTransformerTrainingArguments

    model = SentenceTransformer(str(embedded_default_path()), device="cpu")
    data = Dataset.from_dict(
        {
            "sentence1": [p[0] for p in pairs],
            "sentence2": [p[1] for p in pairs],
            "score": [p[2] for p in pairs],
        }
    )
    with tempfile.TemporaryDirectory() as out:
        args = SentenceTransformerTrainingArguments(
            output_dir=out,
            num_train_epochs=1,
            per_device_train_batch_size=batch_size,
            learning_rate=2e-5,
            warmup_ratio=0.1,
            save_strategy="no",
            eval_strategy="no",
            logging_steps=50,
            report_to="none",
            disable_tqdm=True,
            seed=seed,
            use_cpu=True,
        )
        trainer = SentenceTransformerTrainer(
            model=model, args=args, train_dataset=data, loss=losses.CosineSimilarityLoss(model)
        )
        start = time.perf_counter()
        trainer.train()
        return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1600)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    logging.getLogger("transformers").setLevel(logging.ERROR)
    env = environment()
    print_environment(env)
    sts = read_sts(shared_data_dir() / "stsb" / "sts-train.csv")
    pairs = [(a, b, s / 5.0) for a, b, s in zip(sts.sentences1, sts.sentences2, sts.scores, strict=True)]
    pairs = pairs[: args.pairs]
    steps = -(-len(pairs) // args.batch_size)
    print(f"\n{len(pairs)} pairs, batch {args.batch_size}: {steps} steps per run")
    times: dict[str, list[float]] = {"munjang": [], "sentence-transformers": []}
    runners = {"munjang": run_munjang, "sentence-transformers": run_sentence_transformers}
    for repeat in range(args.repeats):
        for name, runner in runners.items():
            gc.collect()
            seconds = runner(pairs, args.batch_size, args.seed)
            times[name].append(seconds)
            label = f"run {repeat + 1}/{args.repeats} {name}"
            print(f"  {label:<32} {seconds:7.2f} s  {steps / seconds:6.2f} steps/s")
    median = {name: statistics.median(t) for name, t in times.items()}
    rate = {name: steps / m for name, m in median.items()}
    ratio = rate["munjang"] / rate["sentence-transformers"]
    ours, theirs = rate["munjang"], rate["sentence-transformers"]
    print(f"\nmedian steps/s: munjang {ours:.2f}, sentence-transformers {theirs:.2f}")
    print(f"munjang / sentence-transformers: {ratio:.3f}")
    write_result(
        "train_speed",
        {
            "pairs": len(pairs),
            "batch_size": args.batch_size,
            "steps": steps,
            "repeats": args.repeats,
            "times_s": times,
            "median_steps_per_s": rate,
            "ratio_munjang_over_st": ratio,
        },
        env=env,
    )


if __name__ == "__main__":
    main()
