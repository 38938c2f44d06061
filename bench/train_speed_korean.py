"""Training speed of the Korean runs, beside sentence-transformers in the same configuration.

Each configuration is one the Korean model work trains (docs/benchmarks.md): multilingual-e5-small with
the `query: ` prompt, word embeddings frozen for the bi-encoders, bf16 autocast, on the same examples in
the same order for both libraries, no evaluation and no checkpoints; runs alternate, and the median of
`--repeats` is kept. Reported: steps/s of each and the ratio munjang / sentence-transformers.

| name | model | loss | data | batch |
|---|---|---|---|---|
| cosent | bi-encoder | CoSENT | KorSTS train pairs, score / 5 | 16 |
| mnrl | bi-encoder | MNRL, scale 20 | KLUE-NLI (premise, entailed, contradicting) triplets | 64 |
| softmax | bi-encoder | SoftmaxLoss over (u, v, abs(u - v)) | KLUE-NLI labelled pairs | 32 |
| cross-bce | cross-encoder | binary cross-entropy | KorSTS train pairs, score / 5 | 16 |

    python bench/train_speed_korean.py                 # 30 steps each, 2 repeats
    python bench/train_speed_korean.py --configs cosent,cross-bce --steps 60
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import environment, print_environment, shared_data_dir, write_result
from munjang.data import read_nli, read_sts
from munjang.data.nli import nli_pair_examples, nli_triplet_examples
from munjang.models.hub import resolve_model_path
from munjang.training import Example, Trainer, TrainingArguments

MODEL = "multilingual-e5-small"
PROMPT = "query: "
CONFIGS: dict[str, dict[str, Any]] = {
    "cosent": {"kind": "bi", "data": "korsts", "batch": 16, "lr": 2e-5},
    "mnrl": {"kind": "bi", "data": "triplets", "batch": 64, "lr": 3e-5},
    "softmax": {"kind": "bi", "data": "nli-pairs", "batch": 32, "lr": 2e-5},
    "cross-bce": {"kind": "cross", "data": "korsts", "batch": 16, "lr": 3e-5},
}


def examples(kind: str, n: int) -> list[Example]:
    """The first `n` examples of one training set (texts without the prompt)."""
    data = shared_data_dir()
    if kind == "korsts":
        sts = read_sts(data / "korsts" / "sts-train.tsv.gz")
        rows = zip(sts.sentences1, sts.sentences2, sts.scores, strict=True)
        return [Example((a, b), s / 5.0) for a, b, s in rows][:n]
    path = data / "klue-nli" / "klue-nli-train.jsonl.gz"
    nli = read_nli(path, premise="premise", hypothesis="hypothesis", label="label")
    return list(nli_triplet_examples(nli) if kind == "triplets" else nli_pair_examples(nli))[:n]


def run_munjang(name: str, rows: list[Example], mixed_precision: str, seed: int) -> float:
    from munjang.encoders.cross.losses import BinaryCrossEntropyLoss
    from munjang.losses import CoSENTLoss, MultipleNegativesRankingLoss, SoftmaxLoss

    config = CONFIGS[name]
    settings: dict[str, Any] = {}
    if config["kind"] == "cross":
        model: Any = munjang.load_cross_encoder(MODEL, device="cpu")
        loss: Any = BinaryCrossEntropyLoss(model)
        rows = [Example(tuple(PROMPT + t for t in e.texts), e.label) for e in rows]
    else:
        model = munjang.load_encoder(MODEL, device="cpu")
        loss = {
            "cosent": lambda: CoSENTLoss(model),
            "mnrl": lambda: MultipleNegativesRankingLoss(model, scale=20.0),
            "softmax": lambda: SoftmaxLoss(model, num_labels=3),
        }[name]()
        settings = {"prompt_name": "query", "freeze_word_embeddings": True}
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            epochs=1,
            batch_size=config["batch"],
            learning_rate=config["lr"],
            save_checkpoints=False,
            show_progress_bar=False,
            logging_steps=1000,
            mixed_precision=mixed_precision,
            seed=seed,
            **settings,
        )
        trainer = Trainer(model, loss, rows, args=args)
        start = time.perf_counter()
        trainer.train()
        return time.perf_counter() - start


def run_sentence_transformers(name: str, rows: list[Example], mixed_precision: str, seed: int) -> float:
    from datasets import Dataset

    config = CONFIGS[name]
    path = str(resolve_model_path(MODEL))
    width = len(rows[0].texts)
    columns: dict[str, list[Any]] = {f"text{i}": [PROMPT + e.texts[i] for e in rows] for i in range(width)}
    if rows[0].label is not None:
        columns["label"] = [e.label for e in rows]
    data = Dataset.from_dict(columns)
    common = {
        "num_train_epochs": 1,
        "per_device_train_batch_size": config["batch"],
        "learning_rate": config["lr"],
        "warmup_ratio": 0.1,
        "save_strategy": "no",
        "eval_strategy": "no",
        "logging_steps": 1000,
        "report_to": "none",
        "disable_tqdm": True,
        "seed": seed,
        "use_cpu": True,
        "bf16": mixed_precision == "bf16",
    }
    with tempfile.TemporaryDirectory() as out:
        if config["kind"] == "cross":
            from sentence_transformers.cross_encoder import (
                CrossEncoder,
                CrossEncoderTrainer,
                CrossEncoderTrainingArguments,
            )
            from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

            cross = CrossEncoder(path, num_labels=1, device="cpu")
            trainer: Any = CrossEncoderTrainer(
                model=cross,
                args=CrossEncoderTrainingArguments(output_dir=out, **common),
                train_dataset=data,
                loss=BinaryCrossEntropyLoss(cross),
            )
        else:
            from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
            from sentence_transformers.sentence_transformer import losses
            from sentence_transformers.sentence_transformer.training_args import (
                SentenceTransformerTrainingArguments,
            )

            model = SentenceTransformer(path, device="cpu")
            model[0].auto_model.get_input_embeddings().weight.requires_grad_(False)
            loss = {
                "cosent": lambda: losses.CoSENTLoss(model),
                "mnrl": lambda: losses.MultipleNegativesRankingLoss(model, scale=20.0),
                "softmax": lambda: losses.SoftmaxLoss(
                    model, sentence_embedding_dimension=model.get_sentence_embedding_dimension(), num_labels=3
                ),
            }[name]()
            trainer = SentenceTransformerTrainer(
                model=model,
                args=SentenceTransformerTrainingArguments(output_dir=out, **common),
                train_dataset=data,
                loss=loss,
            )
        start = time.perf_counter()
        trainer.train()
        return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated names")
    parser.add_argument("--steps", type=int, default=30, help="optimizer steps per run")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--mixed-precision", default="bf16", choices=("no", "bf16"))
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--name", default="train_speed_korean")
    args = parser.parse_args(argv)
    names = args.configs.split(",")
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        parser.error(f"unknown configurations {unknown}; choose from {', '.join(CONFIGS)}")
    for noisy in ("transformers", "sentence_transformers", "munjang"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    env = environment()
    print_environment(env)
    results: dict[str, Any] = {}
    runners = {"munjang": run_munjang, "sentence-transformers": run_sentence_transformers}
    for name in names:
        config = CONFIGS[name]
        rows = examples(config["data"], args.steps * config["batch"])
        steps = -(-len(rows) // config["batch"])
        times: dict[str, list[float]] = {library: [] for library in runners}
        for repeat in range(args.repeats):
            for library, runner in runners.items():
                gc.collect()
                seconds = runner(name, rows, args.mixed_precision, args.seed)
                times[library].append(round(seconds, 2))
                label = f"{name} run {repeat + 1} {library}"
                print(f"{label:<40} {seconds:7.1f} s {steps / seconds:6.2f} steps/s", flush=True)
        rate = {library: round(steps / statistics.median(t), 3) for library, t in times.items()}
        ratio = round(rate["munjang"] / rate["sentence-transformers"], 3)
        ours, theirs = rate["munjang"], rate["sentence-transformers"]
        print(f"{name}: munjang {ours} steps/s, sentence-transformers {theirs}: {ratio}x", flush=True)
        results[name] = {**config, "steps": steps, "times_s": times, "steps_per_s": rate, "ratio": ratio}
    path = write_result(
        args.name,
        {
            "model": MODEL,
            "mixed_precision": args.mixed_precision,
            "repeats": args.repeats,
            "results": results,
        },
        env=env,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
