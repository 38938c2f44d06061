"""Multilingual knowledge distillation (Reimers & Gurevych 2020): teacher all-MiniLM-L6-v2 (English),
student multilingual-e5-small, trained with MSE so that student(en) ~ teacher(en) and student(ko) ~
teacher(en) on EN-KO pairs aligned from STSb and KorSTS train. Reported: the student's KorSTS test
Spearman and EN->KO / KO->EN translation matching accuracy on the held-apart test-split pairs, before and
after, beside the teacher's STSb test figure.

    python bench/distill.py                   # 4,000 training pairs, 1 epoch
    python bench/distill.py --limit 0 --epochs 2
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
from munjang.data import align_stsb_korsts, read_sts, split_parallel
from munjang.evaluation import STSEvaluator, TranslationEvaluator
from munjang.hub import embedded_default_path
from munjang.losses import MSELoss
from munjang.training import Example, Trainer, TrainingArguments


def student_figures(
    student: munjang.SentenceEncoder, korsts: STSEvaluator, translation: TranslationEvaluator
) -> dict:
    sts = korsts(student)
    match = translation(student)
    return {"korsts_test_spearman": sts["spearman_cosine"] * 100, **{k: v * 100 for k, v in match.items()}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", default="multilingual-e5-small")
    parser.add_argument("--limit", type=int, default=4000, help="training pairs (0: all 10,536)")
    parser.add_argument(
        "--held-out", type=int, default=1000, help="test-split pairs for translation matching"
    )
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    env = environment()
    print_environment(env)
    data = shared_data_dir()
    train_pairs = align_stsb_korsts(data / "stsb" / "sts-train.csv", data / "korsts" / "sts-train.tsv.gz")
    test_pairs = align_stsb_korsts(data / "stsb" / "sts-test.csv", data / "korsts" / "sts-test.tsv")
    _, held_out = split_parallel(test_pairs, args.held_out, seed=args.seed)
    sources, targets = train_pairs.sources, train_pairs.targets
    if args.limit:
        sources, targets = sources[: args.limit], targets[: args.limit]

    teacher = munjang.load_encoder(embedded_default_path(), device="cpu")
    teacher_stsb = STSEvaluator.from_data(
        read_sts(data / "stsb" / "sts-test.csv"), similarity_fns=("cosine",)
    )
    teacher_figure = teacher_stsb(teacher)["spearman_cosine"] * 100
    start = time.perf_counter()
    targets_vec = teacher.encode(sources, batch_size=64, show_progress_bar=True)
    teacher_seconds = time.perf_counter() - start
    examples = [
        Example((s, t), tuple(v.tolist())) for s, t, v in zip(sources, targets, targets_vec, strict=True)
    ]

    korsts = STSEvaluator.from_data(read_sts(data / "korsts" / "sts-test.tsv"), similarity_fns=("cosine",))
    translation = TranslationEvaluator(held_out.sources, held_out.targets, batch_size=64)
    student = munjang.load_encoder(args.student, device="cpu")
    before = student_figures(student, korsts, translation)
    print(f"student before: {before}")
    with tempfile.TemporaryDirectory() as out:
        training = TrainingArguments(
            output_dir=out,
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            seed=args.seed,
            freeze_word_embeddings=True,
            save_checkpoints=False,
            logging_steps=20,
        )
        start = time.perf_counter()
        Trainer(student, MSELoss(student), examples, args=training).train()
        train_seconds = time.perf_counter() - start
    after = student_figures(student, korsts, translation)
    print(f"teacher (all-MiniLM-L6-v2) STSb test Spearman: {teacher_figure:.2f}")
    print(f"student before: {before}")
    print(f"student after:  {after}")
    write_result(
        "distill",
        {
            "teacher": "all-MiniLM-L6-v2 (embedded)",
            "student": args.student,
            "train_pairs": len(examples),
            "held_out_pairs": len(held_out.sources),
            "args": vars(args),
            "teacher_stsb_test_spearman": teacher_figure,
            "student_before": before,
            "student_after": after,
            "teacher_encode_seconds": teacher_seconds,
            "train_seconds": train_seconds,
        },
        env=env,
    )


if __name__ == "__main__":
    main()
