"""Domain adaptation without labels on AutoRAG-ko: does TSDAE or continued masked-LM pretraining on
the pages' own text make multilingual-e5-small retrieve those pages better?

Arms: `before` (e5-small as is), `tsdae` and `mlm` (adapted on the corpus sentences), and each of
the three followed by "the usual fine-tuning" (`+ft`): a short MultipleNegativesRankingLoss run on
pseudo-queries from the same pages, each page's first sentence of a passage ("query: ...") against
the rest of that passage ("passage: ..."), an inverse-cloze pairing that needs no labels. The
questions are never trained on. `before+ft` is the control that says what the fine-tuning alone does.

Each arm's encoder indexes the 720 pages and answers the 114 questions by dense search:
Recall@1/5/10 as AutoRAG computes it, nDCG@10, MRR@10, plus the adaptation's and fine-tuning's
steps and seconds. By default each page is one passage cut at its first 128 tokens (--chunking whole
--eval-max-seq-length 128): a quarter of the encoding of bench/autorag.py's 128-token passages,
which is what six indexings on a shared two-core machine can afford, and a harder setting (the
answer is often further down the page), so there is room to move either way.

The default budgets (16 TSDAE steps, 32 MLM steps, 16 fine-tuning steps) are what fitted the
shared machine; raise them with the flags for a real adaptation run.

    python bench/domain_adapt.py                          # every arm, default budgets
    python bench/domain_adapt.py --arms before,tsdae      # a subset
    python bench/domain_adapt.py --tsdae-steps 1000 --mlm-steps 1000 --ft-steps 200 --name domain_adapt_long

Adapted models and collections are cached under ~/.cache/munjang/bench/domain_adapt (keyed by the
settings), so a rerun only evaluates; --rebuild trains and indexes again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch

import munjang
from autorag import CHUNKINGS, MODEL, load_autorag, run_method
from common import print_environment, write_result
from munjang._util.paths import cache_root
from munjang.data.example import Example
from munjang.losses import MultipleNegativesRankingLoss
from munjang.search.collection.collection import Collection
from munjang.training import Trainer, TrainingArguments
from munjang.training.adaptation import adapt, corpus_sentences

ARMS = ("before", "tsdae", "mlm", "before+ft", "tsdae+ft", "mlm+ft")
PASSAGE_SENTENCES = 6  # a pseudo-query's passage: up to this many consecutive sentences of a page


def ict_pairs(pages: dict[str, str]) -> list[Example]:
    """(first sentence of a passage, the rest of it) for each run of PASSAGE_SENTENCES sentences of
    a page with at least three: pseudo-queries from the corpus itself, with e5's prompts."""
    pairs: list[Example] = []
    for text in pages.values():
        sentences = corpus_sentences([text])
        for start in range(0, len(sentences), PASSAGE_SENTENCES):
            group = sentences[start : start + PASSAGE_SENTENCES]
            if len(group) >= 3:
                pairs.append(Example(texts=("query: " + group[0], "passage: " + " ".join(group[1:]))))
    return pairs


def key_of(settings: Any) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]


def load_or_train(folder: Path, rebuild: bool, train: Any) -> tuple[munjang.SentenceEncoder, dict[str, Any]]:
    """The encoder saved in folder/final with its run record, or train it (and save both)."""
    record_file = folder / "bench_record.json"
    if rebuild:
        shutil.rmtree(folder, ignore_errors=True)
    if record_file.is_file() and (folder / "final").is_dir():
        return munjang.load_encoder(folder / "final"), json.loads(record_file.read_text())
    shutil.rmtree(folder, ignore_errors=True)
    record = train(folder)
    record_file.write_text(json.dumps(record, indent=2))
    return munjang.load_encoder(folder / "final"), record


def fine_tune(
    model: munjang.SentenceEncoder, pairs: list[Example], folder: Path, args: argparse.Namespace
) -> dict[str, Any]:
    kept = model.max_seq_length
    model.max_seq_length = args.ft_max_seq_length
    trainer = Trainer(
        model,
        MultipleNegativesRankingLoss(model),
        pairs,
        args=TrainingArguments(
            output_dir=str(folder),
            max_steps=args.ft_steps,
            epochs=max(1, -(-args.ft_steps * args.ft_batch_size // len(pairs))),
            batch_size=args.ft_batch_size,
            learning_rate=args.ft_lr,
            freeze_word_embeddings=True,
            save_checkpoints=False,
        ),
    )
    summary = trainer.train()
    model.max_seq_length = kept
    model.save(folder / "final")
    return {
        "steps": summary["global_step"],
        "train_s": round(summary["train_seconds"], 1),
        "pairs": len(pairs),
    }


def evaluate(
    encoder: munjang.SentenceEncoder,
    folder: Path,
    args: argparse.Namespace,
    pages: dict[str, str],
    questions: dict[str, str],
    relevant: dict[str, set[str]],
) -> dict[str, Any]:
    """Index the pages with `encoder` (cached in `folder`) and answer the questions by dense search."""
    encoder.max_seq_length = min(args.eval_max_seq_length, encoder.max_seq_length)
    start = time.perf_counter()
    if folder.exists() and not args.rebuild:
        col = Collection.open(folder, encoder=encoder)
    else:
        shutil.rmtree(folder, ignore_errors=True)
        col = Collection.create(folder, MODEL, encoder=encoder, chunking=CHUNKINGS[args.chunking])
        col.add(list(pages), list(pages.values()), show_progress_bar=True, batch_size=16, commit_every=100)
    index_s = round(time.perf_counter() - start, 1)
    metrics = run_method(col, questions, relevant, mode="dense")
    col.close()
    return {**metrics, "index_s": index_s}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arms", default=",".join(ARMS), help="arms to run (comma-separated)")
    parser.add_argument("--tsdae-steps", type=int, default=16)
    parser.add_argument("--mlm-steps", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8, help="adaptation batch size")
    parser.add_argument("--max-seq-length", type=int, default=48, help="adaptation window in tokens")
    parser.add_argument("--ft-steps", type=int, default=16)
    parser.add_argument("--ft-batch-size", type=int, default=16)
    parser.add_argument("--ft-lr", type=float, default=2e-5)
    parser.add_argument("--ft-max-seq-length", type=int, default=64)
    parser.add_argument(
        "--chunking",
        default="whole",
        choices=sorted(CHUNKINGS),
        help="pages to passages (autorag.py)",
    )
    parser.add_argument(
        "--eval-max-seq-length",
        type=int,
        default=128,
        help="encoder window when indexing",
    )
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the machine is shared)")
    parser.add_argument("--cache", type=Path, default=cache_root() / "bench" / "domain_adapt")
    parser.add_argument("--rebuild", action="store_true", help="train and index again")
    parser.add_argument("--name", default="domain_adapt", help="result file name (bench/results/NAME.json)")
    args = parser.parse_args(argv)
    arms = args.arms.split(",")
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        parser.error(f"unknown arm(s) {unknown}; choose from {', '.join(ARMS)}")
    torch.set_num_threads(args.threads)
    env = print_environment()
    pages, questions, relevant = load_autorag()
    sentences = corpus_sentences(list(pages.values()))
    pairs = ict_pairs(pages)
    print(
        f"AutoRAG-ko: {len(pages)} pages -> {len(sentences):,} sentences, {len(pairs):,} pseudo-query pairs; "
        f"{len(questions)} questions (never trained on)",
        flush=True,
    )
    adapt_settings = {
        "tsdae": {"steps": args.tsdae_steps, "batch": args.batch_size, "len": args.max_seq_length},
        "mlm": {"steps": args.mlm_steps, "batch": args.batch_size, "len": args.max_seq_length},
    }
    ft_settings = {
        "steps": args.ft_steps,
        "batch": args.ft_batch_size,
        "lr": args.ft_lr,
        "len": args.ft_max_seq_length,
    }
    results: dict[str, Any] = {}
    for arm in arms:
        base, _, tuned = arm.partition("+")
        settings: dict[str, Any] = {"model": MODEL, "version": munjang.__version__, "base": base}
        record: dict[str, Any] = {}
        if base == "before":
            encoder = munjang.load_encoder(MODEL)
        else:
            settings["adapt"] = adapt_settings[base]

            def train_adapted(folder: Path, method: str = base) -> dict[str, Any]:
                summary = adapt(
                    munjang.load_encoder(MODEL),
                    method,
                    sentences,
                    folder,
                    steps=adapt_settings[method]["steps"],
                    batch_size=args.batch_size,
                    max_seq_length=args.max_seq_length,
                    freeze_word_embeddings=True,
                    save_steps=0,
                )
                return {
                    "adapt_steps": summary["global_step"],
                    "adapt_s": round(summary["train_seconds"], 1),
                    "lm_head": "checkpoint"
                    if summary["head_weights"]
                    else "new, tied to the word embeddings",
                }

            encoder, record = load_or_train(
                args.cache / f"{base}-{key_of(settings)}", args.rebuild, train_adapted
            )
            record = dict(record)
        if tuned:
            settings["ft"] = ft_settings
            start_from = encoder

            def train_tuned(folder: Path, model: munjang.SentenceEncoder = start_from) -> dict[str, Any]:
                return fine_tune(model, pairs, folder, args)

            encoder, ft_record = load_or_train(
                args.cache / f"{base}-ft-{key_of(settings)}", args.rebuild, train_tuned
            )
            record.update({f"ft_{k}": v for k, v in ft_record.items()})
        eval_settings = {**settings, "chunking": args.chunking, "eval_len": args.eval_max_seq_length}
        folder = args.cache / "collections" / f"{arm.replace('+', '-')}-{key_of(eval_settings)}"
        results[arm] = row = {**record, **evaluate(encoder, folder, args, pages, questions, relevant)}
        print(
            f"{arm:<10} R@1 {row['recall@1']:.3f} R@5 {row['recall@5']:.3f} R@10 {row['recall@10']:.3f} "
            f"nDCG@10 {row['ndcg@10']:.3f}  " + " ".join(f"{k}={v}" for k, v in record.items()),
            flush=True,
        )
        path = write_result(  # after every arm, so an interrupted run keeps what it measured
            args.name,
            {
                "model": MODEL,
                "chunking": args.chunking,
                "eval_max_seq_length": args.eval_max_seq_length,
                "sentences": len(sentences),
                "pseudo_query_pairs": len(pairs),
                "settings": {"adapt": adapt_settings, "ft": ft_settings, "freeze_word_embeddings": True},
                "results": results,
            },
            env,
        )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
