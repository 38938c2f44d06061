"""The seeds' contrast (issue 74, docs/seeds.md): one-hot, bag of words, TF-IDF, BM25, word2vec (CBOW
mean, CBOW SIF, skip-gram SIF) and Sentence-BERT (multilingual-e5-small) in one table: KorSTS test
Spearman (cosine; BM25: the mean of both directions' scores), R@1 and nDCG@10 on the shared Korean
retrieval sets (bench/retrieval_sets.py: autorag, chatbot, parakqc, question-pair, korsts), encode
speed (sentences/s over the 2,758 distinct KorSTS test sentences), the peak memory of each row (RSS
rise, sampled) and the three worked examples of munjang.evaluation.representations.

    flock /tmp/munjang-bench.lock python bench/classical.py      # writes bench/results/classical.json

The classical models are fitted on training text only: the sentences of KorSTS train and the
premises and hypotheses of KLUE-NLI train (no dev or test sentence, nothing of the retrieval sets);
word2vec with gensim (vector_size 100, window 5, min_count 2, 10 epochs, seed 1, workers 1). They are
kept in --models (default ~/.cache/munjang/bench/classical) and refitted with --refit. Each row runs
in a fresh process, so its memory figure is its own.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, shared_data_dir, write_result
from retrieval_sets import DEFAULT_QUERIES, KOREAN, LOADERS

SBERT = "multilingual-e5-small"
SEED = 1
W2V = {"vector_size": 100, "window": 5, "min_count": 2, "epochs": 10, "seed": 1, "workers": 1}
# Row name -> (fit kind, options); "bm25" and SBERT need no fitting.
FITTED: dict[str, tuple[str, dict[str, Any]]] = {
    "onehot": ("onehot", {}),
    "bow": ("bow", {}),
    "tfidf": ("tfidf", {}),
    "cbow-mean": ("cbow", {**W2V, "pooling": "mean"}),
    "cbow-sif": ("cbow", {**W2V, "pooling": "sif"}),
    "skipgram-sif": ("skipgram", {**W2V, "pooling": "sif"}),
}
ROWS = ("onehot", "bow", "tfidf", "bm25", "cbow-mean", "cbow-sif", "skipgram-sif", SBERT)


def training_texts() -> list[str]:
    """KorSTS train sentences and KLUE-NLI train premises and hypotheses, distinct, in file order."""
    from munjang.data import read_sts

    data = shared_data_dir()
    korsts = read_sts(data / "korsts" / "sts-train.tsv.gz")
    texts = [*korsts.sentences1, *korsts.sentences2]
    with gzip.open(data / "klue-nli" / "klue-nli-train.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            texts += [row["premise"], row["hypothesis"]]
    return list(dict.fromkeys(t for t in texts if t.strip()))


def fit_all(folder: Path, refit: bool) -> dict[str, Any]:
    from munjang.encoders.classical import fit_classical

    texts = training_texts()
    fitted: dict[str, Any] = {"training_texts": len(texts)}
    for name, (kind, options) in FITTED.items():
        out = folder / name
        if out.exists() and not refit:
            continue
        start = time.perf_counter()
        encoder = fit_classical(kind, texts, fitted_on={"corpus": "korsts-train + klue-nli-train"}, **options)
        encoder.save(out)
        fitted[name] = {"seconds": round(time.perf_counter() - start, 1), **encoder.describe()}
        print(
            f"fitted {name} in {fitted[name]['seconds']} s: {encoder.describe()['vocab_size']} terms",
            flush=True,
        )
    return fitted


def retrieval_sets() -> dict[str, Any]:
    from munjang.data import RetrievalData

    sets = {}
    for name in KOREAN:
        found = LOADERS[name]().sample(DEFAULT_QUERIES.get(name), SEED)
        corpus = {d: {"title": "", "text": t} for d, t in found.corpus.items()}
        qrels = {q: dict.fromkeys(r, 1) for q, r in found.qrels.items()}
        sets[name] = RetrievalData(corpus, found.queries, qrels, source=name)
    return sets


def one_row(name: str, folder: Path) -> dict[str, Any]:
    """Measure one representation (in this process) and return its row."""
    from munjang.data import read_sts
    from munjang.encoders.embedder import load_embedder
    from munjang.evaluation.representations import BM25Representation, EncoderRepresentation, measure

    sts = read_sts(shared_data_dir() / "korsts" / "sts-test.tsv")
    sets = retrieval_sets()
    start = time.perf_counter()
    if name == "bm25":
        representation: Any = BM25Representation()
    else:
        model = SBERT if name == SBERT else str(folder / name)
        representation = EncoderRepresentation(name, load_embedder(model))
    loaded = time.perf_counter() - start
    row = measure(representation, sts, sets).to_dict()
    return {**row, "load_seconds": round(loaded, 2), "sets": {n: d.stats() for n, d in sets.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=Path.home() / ".cache/munjang/bench/classical")
    parser.add_argument("--refit", action="store_true")
    parser.add_argument("--row", help="Measure one row in this process and print it as JSON (internal).")
    parser.add_argument("--rows", nargs="*", default=list(ROWS))
    args = parser.parse_args()
    if args.row:
        print("ROW " + json.dumps(one_row(args.row, args.models), ensure_ascii=False))
        return
    env = print_environment()
    fitted = fit_all(args.models, args.refit)
    rows = []
    for name in args.rows:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, __file__, "--models", str(args.models), "--row", name],
            capture_output=True,
            text=True,
            check=False,
        )
        found = [line for line in done.stdout.splitlines() if line.startswith("ROW ")]
        if done.returncode or not found:
            sys.stderr.write(done.stderr[-4000:])
            raise SystemExit(f"row {name} failed")
        row = json.loads(found[-1][4:])
        row["wall_seconds"] = round(time.perf_counter() - started, 1)
        rows.append(row)
        print(f"{name}: STS {row['sts_spearman'] * 100:.2f}, {row['wall_seconds']} s", flush=True)
    from munjang.evaluation.representations import Row, example_lines, table

    shown = [
        Row(r["name"], r["sts_spearman"], r["retrieval"], r["sentences_per_s"], r["peak_mib"], r["examples"])
        for r in rows
    ]
    for line in [*table(shown, list(KOREAN)), "", *example_lines(shown)]:
        print(line)
    payload = {
        "fitted_on": "KorSTS train sentences + KLUE-NLI train premises and hypotheses (distinct)",
        "word2vec": W2V,
        "sbert": SBERT,
        "fitted": fitted,
        "rows": rows,
    }
    print(write_result("classical", payload, env))


if __name__ == "__main__":
    main()
