"""Multilingual knowledge distillation (Reimers & Gurevych 2020): a teacher's embedding of each English
sentence is the target of the student's embedding of both the English sentence and its Korean
translation (MSE), on EN-KO pairs aligned from STSb and KorSTS train. Reported: the student's KorSTS test
Spearman, STSb test Spearman (its English) and EN->KO / KO->EN translation matching accuracy on held-apart
test-split pairs, before and after, beside the teacher's STSb and KorSTS figures.

The recipe that helps: a teacher that shares the student's sentence space. The default teacher is
munjang-ko-small (`make korean-model`: multilingual-e5-small fine-tuned on KorSTS + KorNLI) and the student
is multilingual-e5-small itself, so the targets are near where the student starts and MSE moves it
towards the teacher's English (and, through the translations, Korean) similarity instead of rotating it
into a foreign space. The seed recipe, `--teacher embedded` (the English all-MiniLM-L6-v2, whose 384-d
space has nothing in common with e5-small's), drags the student there through 10k pairs and ends below
where it started. Models with a "query" prompt (e5) encode with it, in training too.

    python bench/distill.py                                   # munjang-ko-small -> e5-small, 1 epoch
    python bench/distill.py --teacher embedded --limit 0 --epochs 2 --mixed-precision no --name distill-minilm
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import environment, print_environment, shared_data_dir, write_result
from munjang.data import align_stsb_korsts, read_sts, split_parallel
from munjang.evaluation import STSEvaluator, TranslationEvaluator
from munjang.losses import MSELoss
from munjang.models.hub import embedded_default_path
from munjang.training import Example, Trainer, TrainingArguments


def query_prompt(encoder: munjang.SentenceEncoder) -> str | None:
    """The prompt "query" where the model defines it (e5), else none."""
    return "query" if "query" in encoder.prompts else None


def figures(encoder: munjang.SentenceEncoder, data: Path, translation: Any = None) -> dict[str, float]:
    """KorSTS and STSb test Spearman (x 100) and, given the evaluator's pairs, translation matching."""
    prompt = query_prompt(encoder)
    out = {}
    for name, path in (
        ("korsts", data / "korsts" / "sts-test.tsv"),
        ("stsb", data / "stsb" / "sts-test.csv"),
    ):
        sts = STSEvaluator.from_data(
            read_sts(path), similarity_fns=("cosine",), prompt_name=prompt, batch_size=64
        )
        out[f"{name}_test_spearman"] = round(sts(encoder)["spearman_cosine"] * 100, 2)
    if translation is not None:
        match = TranslationEvaluator(*translation, batch_size=64, prompt_name=prompt)(encoder)
        out.update({k: round(v * 100, 2) for k, v in match.items()})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", default="multilingual-e5-small")
    parser.add_argument(
        "--teacher", default="munjang-ko-small", help="model name or folder; 'embedded': all-MiniLM-L6-v2"
    )
    parser.add_argument("--limit", type=int, default=0, help="training pairs (0: all 10,536)")
    parser.add_argument(
        "--held-out", type=int, default=1000, help="test-split pairs for translation matching"
    )
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--mixed-precision", default="bf16", choices=("no", "bf16", "auto"))
    parser.add_argument("--name", default="distill", help="result file name under bench/results")
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

    teacher_path = embedded_default_path() if args.teacher == "embedded" else args.teacher
    teacher = munjang.load_encoder(teacher_path, device="cpu", precision="fp32")
    teacher_figures = figures(teacher, data, (held_out.sources, held_out.targets))
    print(f"teacher {args.teacher}: {teacher_figures}")
    start = time.perf_counter()
    targets_vec = teacher.encode(
        sources, batch_size=64, show_progress_bar=True, prompt_name=query_prompt(teacher)
    )
    teacher_seconds = time.perf_counter() - start
    examples = [
        Example((s, t), tuple(v.tolist())) for s, t, v in zip(sources, targets, targets_vec, strict=True)
    ]

    translation = (held_out.sources, held_out.targets)
    student = munjang.load_encoder(args.student, device="cpu", precision="fp32")
    before = figures(student, data, translation)
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
            prompt_name=query_prompt(student),
            mixed_precision=args.mixed_precision,
        )
        start = time.perf_counter()
        Trainer(student, MSELoss(student), examples, args=training).train()
        train_seconds = time.perf_counter() - start
    after = figures(student, data, translation)
    print(f"teacher {args.teacher}: {teacher_figures}")
    print(f"student before: {before}")
    print(f"student after:  {after}")
    write_result(
        args.name,
        {
            "teacher": "all-MiniLM-L6-v2 (embedded)" if args.teacher == "embedded" else args.teacher,
            "student": args.student,
            "train_pairs": len(examples),
            "held_out_pairs": len(held_out.sources),
            "args": vars(args),
            "teacher_figures": teacher_figures,
            "student_before": before,
            "student_after": after,
            "teacher_encode_seconds": teacher_seconds,
            "train_seconds": train_seconds,
        },
        env=env,
    )


if __name__ == "__main__":
    main()
