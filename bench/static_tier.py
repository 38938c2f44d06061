"""The static tier: a StaticEmbedding model distilled by munjang from multilingual-e5-small
(every vocabulary token through the model, PCA, Zipf weighting), then fine-tuned the tokenlearn way on
e5-small's vectors of Korean and English training sentences, against e5-small itself in the same run:
encode speed (sentences/s over a mixed Korean/English corpus, best of 5 rounds) and Spearman × 100 on
KorSTS dev / test and STSb dev / test (cosine). A static model keeps its words' token ids, so repeated
rounds read words it has seen; its first pass over the 54k distinct sentences of the tokenlearn corpus,
freshly loaded, is reported beside them, with the tokenizer's own speed.

    python bench/static_tier.py                 # writes bench/results/static_tier.json

The tokenlearn corpus is training text only: KLUE-NLI train premises and hypotheses, KorSTS train and
STSb train sentences (no dev or test sentence; `query: ` for the teacher). The held-out tenth that
stops training is a slice of that corpus, so no STS label chooses anything. Both models are kept in
--out (default: ~/.cache/munjang/bench/e5-small-static-DIM, and -tokenlearn beside it) and reused.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import load_corpus, print_environment, shared_data_dir, write_result
from munjang.data import read_sts
from munjang.evaluation import STSEvaluator

MODEL = "multilingual-e5-small"


def speed(encoder: Any, corpus: list[str], rounds: int = 5, **options: Any) -> float:
    """Sentences per second, best of `rounds` (after a warm-up batch). A round encodes the corpus as
    many times as make it last half a second: a static model takes a few milliseconds per pass,
    too short to time once."""
    encoder.encode(corpus[:64], **options)
    started = time.perf_counter()
    encoder.encode(corpus, **options)
    passes = max(1, math.ceil(0.5 / (time.perf_counter() - started)))
    best = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(passes):
            encoder.encode(corpus, **options)
        best = max(best, passes * len(corpus) / (time.perf_counter() - started))
    return round(best, 1)


def sts(encoder: Any, path: Path, prompt_name: str | None) -> float:
    evaluator = STSEvaluator.from_data(read_sts(path), similarity_fns=("cosine",), prompt_name=prompt_name)
    return round(evaluator(encoder)["spearman_cosine"] * 100, 2)


def first_pass(folder: Path, texts: list[str], repeats: int = 3) -> tuple[float, float]:
    """Sentences per second of a freshly loaded model reading `texts` once, every word new to its word
    cache when the pass starts: (the whole pass, its second half alone: how a long stream of texts never
    seen runs once the cache holds the common words), each the median of `repeats` fresh loads."""
    whole, second = [], []
    for _ in range(repeats):
        encoder = munjang.load_encoder(str(folder))  # the word cache's one-time check is in the pass
        half = len(texts) // 2
        started = time.perf_counter()
        encoder.encode(texts[:half])
        middle = time.perf_counter()
        encoder.encode(texts[half:])
        ended = time.perf_counter()
        whole.append(len(texts) / (ended - started))
        second.append((len(texts) - half) / (ended - middle))
    return round(statistics.median(whole), 1), round(statistics.median(second), 1)


class Tokenizing:
    """A tokenizer alone (the ids of every text, as a static model read them before its word cache),
    timed as `speed` times a model."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def encode(self, texts: list[str], **_: Any) -> None:
        for encoding in self.tokenizer.encode_batch_fast(texts, add_special_tokens=False):
            encoding.ids  # noqa: B018  # reading the ids is part of the cost


def tokenlearn_corpus() -> list[str]:
    """Distinct training sentences: KLUE-NLI train (premises, hypotheses), KorSTS train, STSb train."""
    import gzip

    data = shared_data_dir()
    texts: list[str] = []
    with gzip.open(data / "klue-nli" / "klue-nli-train.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            texts += [row["premise"], row["hypothesis"]]
    for path, fmt in (("korsts/sts-train.tsv.gz", "korsts"), ("stsb/sts-train.csv", "stsb")):
        train = read_sts(data / path, fmt)
        texts += [*train.sentences1, *train.sentences2]
    return [t for t in dict.fromkeys(t.strip() for t in texts) if t]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--sentences", type=int, default=4000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--name", default="static_tier")
    parser.add_argument("--no-tokenlearn", action="store_true", help="the distilled model only")
    parser.add_argument("--first-pass-repeats", type=int, default=3, help="fresh loads, median taken")
    parser.add_argument(
        "--first-pass-only",
        action="store_true",
        help="only the first pass of the distilled model (kept in --out), e.g. to compare two checkouts",
    )
    args = parser.parse_args(argv)
    env = print_environment()
    if args.first_pass_only:
        return first_pass_only(args, env)
    from munjang.training.static_distill import distill_static

    out = model_folder(args)
    teacher = munjang.load_encoder(MODEL)
    timing = out / "distill.json"
    if (out / "modules.json").exists() and timing.exists():
        static = munjang.load_encoder(str(out))
        distill_s = json.loads(timing.read_text(encoding="utf-8"))["seconds"]
    else:
        started = time.perf_counter()
        static = distill_static(teacher, dim=args.dim)
        distill_s = round(time.perf_counter() - started, 1)
        static.save(str(out))
        timing.write_text(json.dumps({"seconds": distill_s}), encoding="utf-8")
    models = [("e5-small", teacher, "query"), ("static", static, None)]
    tokenlearn: dict[str, Any] | None = None
    if not args.no_tokenlearn:
        tuned_out = out.with_name(out.name + "-tokenlearn")
        record = tuned_out / "tokenlearn.json"
        if (tuned_out / "modules.json").exists() and record.exists():
            tuned = munjang.load_encoder(str(tuned_out))
            tokenlearn = json.loads(record.read_text(encoding="utf-8"))
        else:
            from munjang.training import tokenlearn_static

            texts = tokenlearn_corpus()
            print(f"tokenlearn corpus: {len(texts)} training sentences", flush=True)
            started = time.perf_counter()
            fit = tokenlearn_static(static, texts, teacher, prompt="query: ")
            tokenlearn = {
                "texts": len(texts),
                "seconds_with_teacher_encoding": round(time.perf_counter() - started, 1),
                "training_seconds": fit.seconds,
                "steps": fit.steps,
                "epochs": fit.epochs,
                "best_step": fit.best_step,
                "trained_tokens": fit.trained_tokens,
                "explained_variance": fit.explained_variance,
                "validation_loss": fit.validation_loss,
            }
            print({k: v for k, v in tokenlearn.items() if k != "validation_loss"}, flush=True)
            tuned = fit.model
            tuned.save(str(tuned_out))
            record.write_text(json.dumps(tokenlearn), encoding="utf-8")
        models.append(("static+tokenlearn", tuned, None))
    corpus = load_corpus(args.sentences, seed=0, lang="mixed")
    data = shared_data_dir()
    rows: dict[str, Any] = {}
    exact = munjang.load_encoder(MODEL, backend="torch", precision="fp32")
    fp32_speed = speed(exact, corpus, rounds=2, prompt_name="query")
    print(f"e5-small torch fp32: {fp32_speed} sentences/s", flush=True)
    for name, encoder, prompt in models:
        rows[name] = {
            "sentences_per_s": speed(encoder, corpus, prompt_name=prompt),
            "korsts_dev": sts(encoder, data / "korsts" / "sts-dev.tsv", prompt),
            "korsts_test": sts(encoder, data / "korsts" / "sts-test.tsv", prompt),
            "stsb_dev": sts(encoder, data / "stsb" / "sts-dev.csv", prompt),
            "stsb_test": sts(encoder, data / "stsb" / "sts-test.csv", prompt),
        }
        print(name, rows[name], flush=True)
    ratio = round(rows["static"]["sentences_per_s"] / rows["e5-small"]["sentences_per_s"], 1)
    ratio_fp32 = round(rows["static"]["sentences_per_s"] / fp32_speed, 1)
    print(f"static / e5-small speed: {ratio}x its default, {ratio_fp32}x torch fp32", flush=True)
    tokenizer_speed = speed(Tokenizing(static[0].tokenizer), corpus)  # the tokenizer's own speed
    print(f"e5-small's tokenizer alone: {tokenizer_speed} sentences/s", flush=True)
    stream = tokenlearn_corpus()
    cold, second_half = first_pass(out, stream, args.first_pass_repeats)
    e5_speed = rows["e5-small"]["sentences_per_s"]
    cold_ratio, second_ratio = round(cold / e5_speed, 1), round(second_half / e5_speed, 1)
    print(f"static, first pass over {len(stream)} distinct sentences: {cold} sentences/s ({cold_ratio}x),")
    print(f"its second half {second_half} sentences/s ({second_ratio}x)", flush=True)
    path = write_result(
        args.name,
        {
            "teacher": MODEL,
            "dim": args.dim,
            "distill_seconds": distill_s,
            "speed_ratio": ratio,
            "e5_small_torch_fp32_sentences_per_s": fp32_speed,
            "speed_ratio_to_torch_fp32": ratio_fp32,
            "tokenizer_sentences_per_s": tokenizer_speed,
            "first_pass": {
                "sentences": len(stream),
                "sentences_per_s": cold,
                "speed_ratio": cold_ratio,
                "second_half_sentences_per_s": second_half,
                "second_half_speed_ratio": second_ratio,
            },
            "tokenlearn": tokenlearn,
            "results": rows,
        },
        env,
    )
    print(f"wrote {path}")
    return 0


def model_folder(args: argparse.Namespace) -> Path:
    """Where the distilled model is kept: --out, or a folder in munjang's cache named by its size."""
    return args.out or Path.home() / ".cache" / "munjang" / "bench" / f"e5-small-static-{args.dim}"


def first_pass_only(args: argparse.Namespace, env: dict[str, Any]) -> int:
    """The first pass alone, on the distilled model a full run left in --out."""
    out = model_folder(args)
    if not (out / "modules.json").exists():
        raise SystemExit(f"error: no distilled model in {out}: run python bench/static_tier.py first")
    stream = tokenlearn_corpus()
    cold, second_half = first_pass(out, stream, args.first_pass_repeats)
    print(f"static, first pass over {len(stream)} distinct sentences: {cold} sentences/s,")
    print(f"its second half {second_half} sentences/s (median of {args.first_pass_repeats} fresh loads)")
    result = {
        "sentences": len(stream),
        "repeats": args.first_pass_repeats,
        "sentences_per_s": cold,
        "second_half_sentences_per_s": second_half,
    }
    path = write_result(args.name, {"munjang_source": munjang.__file__, "first_pass": result}, env)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
