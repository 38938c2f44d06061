"""Fine-tune multilingual-e5-small on KorSTS train and report KorSTS test Spearman before and after.

    python bench/train_korsts.py            # writes bench/results/train_korsts.json
    python bench/train_korsts.py --loss cosine --epochs 2
    python bench/train_korsts.py --loss angle --epochs 3 --name train_korsts_angle
    python bench/train_korsts.py --augment crosslingual --epochs 2 --name train_korsts_crosslingual
    python bench/train_korsts.py --silver-model runs/ce-korsts-e5/best --name train_korsts_augsbert
    python bench/train_korsts.py --silver-teacher runs/stsb-minilm/best --name train_korsts_teacher
    python bench/train_korsts.py --nli --output-dir runs/korsts-e5-multitask --name train_korsts_multitask

`--augment english` adds the English STSb train pairs; `--augment crosslingual` adds them and, per row, one
mixed pair (English sentence1 with Korean sentence2 on even rows, the reverse on odd rows), all with the
row's gold score. KorSTS is STSb translated row by row, so the labels carry over unchanged.
`--silver-model` adds Augmented SBERT silver pairs: each train sentence with its nearest train
sentences, scored by a cross-encoder trained on the same data (bench/cross_encoder_korsts.py).
`--silver-teacher` scores the same kind of pairs with an English bi-encoder fine-tuned on STSb
(bench/train_stsb_teacher.py), through the pairs' English rows.
`--nli` trains two tasks in turn, one batch each (round robin, as the Korean "multitask" SBERT models do):
KorSTS with the chosen loss and KorNLI xnli.dev.ko (premise, entailed, contradicting) triplets with
MultipleNegativesRankingLoss (in-batch negatives, scale 20). xnli.test.ko stays unseen.

The model is the named multilingual-e5-small (`munjang models pull multilingual-e5-small` installs it;
loading it by name pulls it on first use). Training and evaluation both use the model's "query: " prompt.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import environment, print_environment, shared_data_dir, training_arguments, write_result
from munjang.data import STSData, align_sts_pairs, nli_triplet_examples, read_nli, read_sts
from munjang.evaluation import STSEvaluator
from munjang.losses import AnglELoss, CoSENTLoss, CosineSimilarityLoss, MultipleNegativesRankingLoss
from munjang.search import semantic_search
from munjang.similarity import pairwise_cos_sim
from munjang.training import Example, Trainer


def neighbour_pairs(encoder_path: str, train: STSData, neighbours: int) -> list[tuple[str, str]]:
    """Augmented SBERT (Thakur et al. 2021), semantic search sampling: pair each train sentence with its
    nearest other train sentences under the bi-encoder, leaving out the gold pairs and repeats."""
    encoder = munjang.load_encoder(encoder_path, device="cpu")
    sentences = list(dict.fromkeys([*train.sentences1, *train.sentences2]))
    vectors = encoder.encode(sentences, prompt_name="query", batch_size=64, show_progress_bar=True)
    gold = {frozenset(p) for p in zip(train.sentences1, train.sentences2, strict=True)}
    seen: set[frozenset[str]] = set()
    pairs: list[tuple[str, str]] = []
    for i, hits in enumerate(semantic_search(vectors, vectors, top_k=neighbours + 1)):
        for hit in hits:
            key = frozenset((sentences[i], sentences[hit.corpus_id]))
            if hit.corpus_id == i or len(key) < 2 or key in gold or key in seen:
                continue
            seen.add(key)
            pairs.append((sentences[i], sentences[hit.corpus_id]))
    return pairs


def cross_encoder_labels(cross_path: str, pairs: list[tuple[str, str]]) -> list[Example]:
    """Silver scores from a Korean cross-encoder trained on the same data (bench/cross_encoder_korsts.py)."""
    cross = munjang.load_cross_encoder(cross_path, device="cpu")
    scores = cross.predict(pairs, batch_size=64, show_progress_bar=True)
    return [Example(pair, float(score)) for pair, score in zip(pairs, scores, strict=True)]


def teacher_labels(
    teacher_path: str, pairs: list[tuple[str, str]], english: dict[str, str], calibration: STSData
) -> tuple[list[Example], dict]:
    """Silver scores carried across the translation: an English bi-encoder fine-tuned on STSb
    (bench/train_stsb_teacher.py) scores the English sides of the Korean pairs. Its cosines are mapped to
    the gold scale (score / 5) by a least-squares line fitted on STSb dev, so gold and silver pairs can be
    compared within one batch. Pairs with a sentence that has no English row are left out."""
    teacher = munjang.load_encoder(teacher_path, device="cpu")
    dev_cos = paired_cosine(teacher, calibration.sentences1, calibration.sentences2)
    slope, intercept = np.polyfit(dev_cos, np.asarray(calibration.scores) / 5.0, 1)
    kept = [p for p in pairs if p[0].strip() in english and p[1].strip() in english]
    cos = paired_cosine(teacher, [english[a.strip()] for a, _ in kept], [english[b.strip()] for _, b in kept])
    scores = np.clip(slope * cos + intercept, 0.0, 1.0)
    examples = [Example(pair, float(score)) for pair, score in zip(kept, scores, strict=True)]
    return examples, {
        "slope": float(slope),
        "intercept": float(intercept),
        "unaligned": len(pairs) - len(kept),
    }


def paired_cosine(encoder: munjang.SentenceEncoder, left: list[str], right: list[str]) -> np.ndarray:
    unique = list(dict.fromkeys([*left, *right]))
    vectors = encoder.encode(unique, batch_size=64, show_progress_bar=True)
    index = {s: i for i, s in enumerate(unique)}
    return pairwise_cos_sim(vectors[[index[s] for s in left]], vectors[[index[s] for s in right]])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--loss", choices=("cosent", "angle", "cosine"), default="cosent")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--eval-steps", type=int, default=180)
    parser.add_argument("--freeze-word-embeddings", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--mixed-precision", default="no", choices=("no", "bf16", "auto"))
    parser.add_argument("--output-dir", default="runs/korsts-e5")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--augment", choices=("none", "english", "crosslingual"), default="none")
    parser.add_argument("--name", default="train_korsts", help="result file name under bench/results")
    parser.add_argument(
        "--silver-model", help="cross-encoder that labels extra KorSTS train pairs (Augmented SBERT)"
    )
    parser.add_argument(
        "--silver-teacher",
        help="English bi-encoder fine-tuned on STSb (bench/train_stsb_teacher.py) that labels extra KorSTS "
        "train pairs through their English rows",
    )
    parser.add_argument("--silver-neighbours", type=int, default=3, help="silver pairs per train sentence")
    parser.add_argument(
        "--nli",
        action="store_true",
        help="multi-task: add KorNLI xnli.dev.ko triplets with MultipleNegativesRankingLoss, batches in turn",
    )
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
    description = "KorSTS sts-train.tsv (5,749 pairs, scores / 5)"
    if args.augment != "none":
        aligned = align_sts_pairs(data / "stsb" / "sts-train.csv", data / "korsts" / "sts-train.tsv.gz")
        examples += [Example(row.english, row.score / 5.0) for row in aligned]
        description += f" + STSb sts-train.csv ({len(aligned):,} English pairs)"
        if args.augment == "crosslingual":
            examples += [
                Example(
                    (row.english[0], row.korean[1]) if i % 2 == 0 else (row.korean[0], row.english[1]),
                    row.score / 5.0,
                )
                for i, row in enumerate(aligned)
            ]
            description += f" + {len(aligned):,} mixed English/Korean pairs"
    if args.silver_model and args.silver_teacher:
        parser.error("--silver-model and --silver-teacher are alternatives; give one")
    silver_info: dict = {}
    if args.silver_model or args.silver_teacher:
        pairs = neighbour_pairs(args.model, train, args.silver_neighbours)
        if args.silver_model:
            silver = cross_encoder_labels(args.silver_model, pairs)
        else:
            aligned = align_sts_pairs(data / "stsb" / "sts-train.csv", data / "korsts" / "sts-train.tsv.gz")
            english: dict[str, str] = {}
            for row in aligned:
                for ko, en in zip(row.korean, row.english, strict=True):
                    english.setdefault(ko.strip(), en.strip())
            silver, silver_info = teacher_labels(
                args.silver_teacher, pairs, english, read_sts(data / "stsb" / "sts-dev.csv")
            )
            print(f"teacher calibration and coverage: {silver_info}")
        examples += silver
        description += (
            f" + {len(silver):,} silver pairs labelled by {args.silver_model or args.silver_teacher}"
        )
    print(f"training on {len(examples):,} pairs: {description}")

    def evaluator(pairs):
        return STSEvaluator.from_data(pairs, similarity_fns=("cosine",), prompt_name="query", batch_size=64)

    model = munjang.load_encoder(args.model, device="cpu")
    before = evaluator(test)(model)["spearman_cosine"] * 100
    print(f"KorSTS test Spearman before: {before:.2f}")
    losses = {"cosent": CoSENTLoss, "angle": AnglELoss, "cosine": CosineSimilarityLoss}
    task_losses: dict[str, torch.nn.Module] = {"korsts": losses[args.loss](model)}
    task_data: dict[str, list[Example]] = {"korsts": examples}
    if args.nli:
        task_data["kornli"] = list(nli_triplet_examples(read_nli(data / "kornli" / "xnli.dev.ko.tsv")))
        task_losses["kornli"] = MultipleNegativesRankingLoss(model, scale=20.0)
        description += f"; in turn with KorNLI xnli.dev.ko ({len(task_data['kornli']):,} triplets, MNRL)"
        print(f"multi-task: {len(task_data['kornli']):,} KorNLI triplets beside the STS pairs")
    training_args = training_arguments(
        args,
        prompt_name="query",
        freeze_word_embeddings=args.freeze_word_embeddings,
        mixed_precision=args.mixed_precision,
    )
    trainer = Trainer(
        model,
        task_losses,
        task_data,
        evaluator(dev),
        training_args,
        data_description={"train": description},
    )
    start = time.perf_counter()
    summary = trainer.train(resume_from_checkpoint=args.resume or None)
    wall = time.perf_counter() - start
    best = munjang.load_encoder(Path(args.output_dir) / "best", device="cpu")
    after_best = evaluator(test)(best)["spearman_cosine"] * 100
    after_final = evaluator(test)(model)["spearman_cosine"] * 100
    curve = [json.loads(line) for line in (Path(args.output_dir) / "metrics.jsonl").read_text().splitlines()]
    print(
        f"KorSTS test Spearman: before {before:.2f}, "
        f"after (best on dev) {after_best:.2f}, final {after_final:.2f}"
    )
    print(f"wall time {wall:.0f} s, {summary['global_step']} steps")
    write_result(
        args.name,
        {
            "model": args.model,
            "args": vars(args),
            "training_arguments": training_args.to_dict(),
            "korsts_test_spearman_before": before,
            "korsts_test_spearman_after_best": after_best,
            "korsts_test_spearman_after_final": after_final,
            "best_dev_spearman": summary["best_metric"],
            "best_step": summary["best_step"],
            "steps": summary["global_step"],
            "wall_seconds": wall,
            "silver": silver_info,
            "nli_triplets": len(task_data.get("kornli", [])),
            "curve": curve,
        },
        env=env,
    )


if __name__ == "__main__":
    main()
