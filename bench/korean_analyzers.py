"""Korean analysers for BM25, side by side: what each costs a new process, and what it does to search.

A new process (a CLI call, a server replica, a worker) analyses its first Korean query only once its
analyser is loaded, so the load is part of "a new reader answers". Kiwi builds its model and
dictionaries in the process (seconds, holding the interpreter lock; more with its multi-word
dictionary, which turns some proper-noun phrases into one token); MeCab maps mecab-ko-dic, the
dictionary of Lucene's Nori analyser (milliseconds). This measures, per analyser setting:

- load: a fresh process per setting and round makes the analyser and analyses one sentence; its
  CPU seconds, wall seconds and peak RSS (the setting's own cost, whatever else runs);
- speed: analysing a fixed sample of the sets' documents in this process once loaded, twice;
- quality: each Korean retrieval set of bench/korean_retrieval.py in a folder collection per setting
  (documents whole, the same cached multilingual-e5-small vectors: only the tokens differ), answered
  in the default hybrid mode and by BM25 alone, nDCG@10 and recall@1/5/10.

    python bench/korean_analyzers.py                      # Kiwi against MeCab's compound modes
    python bench/korean_analyzers.py --settings kiwi,kiwi-multi-words --name kiwi_dictionary
    python bench/korean_analyzers.py --sets autorag,korsts --rounds 5

The vector cache is bench/backend_quality.py's ($TMPDIR/munjang-bench-cache/backend_quality).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from backend_quality import METRICS, CachedEncoder, judge
from common import print_environment, write_result
from retrieval_sets import DEFAULT_QUERIES, KOREAN, LOADERS

# The Korean tokenizer inside the default "auto" tokenizer, per setting ("kiwi": munjang's default).
SETTINGS: dict[str, dict[str, Any]] = {
    "kiwi": {"name": "kiwi", "multi_words": False},
    "kiwi-multi-words": {"name": "kiwi", "multi_words": True},
    "mecab-split": {"name": "mecab", "compounds": "split"},
    "mecab-whole": {"name": "mecab", "compounds": "whole"},
    "mecab-both": {"name": "mecab", "compounds": "both"},
}
DEFAULT_SETTINGS = "kiwi,mecab-split,mecab-whole,mecab-both"

LOAD_PROBE = """
import json, resource, sys, time
cpu, wall = time.process_time(), time.perf_counter()
from munjang.search.index.tokenizers import tokenizer_from_config
tokenizer_from_config(json.loads(sys.argv[1]))("한국어 형태소 분석기로 문장을 나눈다")
print(json.dumps({"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def load_costs(settings: list[str], rounds: int) -> dict[str, Any]:
    """Per setting: the median CPU seconds, wall seconds and peak RSS of `rounds` fresh processes
    importing munjang's tokenizers, making the analyser and analysing one sentence."""
    out: dict[str, Any] = {}
    for name in settings:
        config = SETTINGS[name]
        runs = [
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", LOAD_PROBE, json.dumps(config)],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            for _ in range(rounds)
        ]
        out[name] = {k: round(float(np.median([r[k] for r in runs])), 3) for k in runs[0]}
        print(f"load {name:12s} {out[name]}", flush=True)
    return out


def speeds(settings: list[str], texts: list[str]) -> dict[str, Any]:
    """Per setting: texts analysed per second (and characters per second) once the analyser is
    loaded, in a first pass (MeCab's mapped dictionary is read from disk as words need it) and a
    second (what a long-running process sees)."""
    from munjang.search.index.tokenizers import tokenizer_from_config

    chars = sum(len(t) for t in texts)
    out: dict[str, Any] = {}
    for name in settings:
        tokenizer = tokenizer_from_config(SETTINGS[name])
        tokenizer(texts[0])
        passes = []
        for _ in range(2):
            start = time.perf_counter()
            tokens = tokenizer.tokenize_many(texts)
            passes.append(time.perf_counter() - start)
        out[name] = {
            "first_pass_texts_per_s": round(len(texts) / passes[0], 1),
            "texts_per_s": round(len(texts) / passes[1], 1),
            "chars_per_s": round(chars / passes[1]),
            "tokens_per_text": round(sum(map(len, tokens)) / len(texts), 2),
        }
        print(f"speed {name:12s} {out[name]}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", default=DEFAULT_SETTINGS, help=f"of {', '.join(SETTINGS)}")
    parser.add_argument("--baseline", default="kiwi", help="the setting the others are compared with")
    parser.add_argument("--sets", default=",".join(KOREAN))
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per load measurement")
    parser.add_argument("--speed-texts", type=int, default=2000, help="documents analysed for speed")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "munjang-bench-cache")
    parser.add_argument("--name", default="korean_analyzers")
    args = parser.parse_args(argv)
    settings = args.settings.split(",")
    if unknown := set(settings) - set(SETTINGS):
        parser.error(f"unknown settings {sorted(unknown)}; known: {', '.join(SETTINGS)}")
    if args.baseline not in settings:
        parser.error(f"--baseline {args.baseline} is not among --settings")
    env = print_environment()
    import munjang
    from munjang.search.collection.collection import Collection

    load = load_costs(settings, args.rounds)
    encoder = munjang.load_encoder(args.model, device="cpu")
    results: dict[str, Any] = {}
    sample: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for set_name in args.sets.split(","):
            data = LOADERS[set_name]().sample(DEFAULT_QUERIES.get(set_name), args.seed)
            qids = sorted(data.qrels)
            sample += list(data.corpus.values())[: args.speed_texts // len(args.sets.split(","))]
            vectors = args.cache_dir / "backend_quality" / f"{set_name}-{args.model}.npz"
            cached = CachedEncoder(encoder, vectors)
            results[set_name] = {"corpus": len(data.corpus), "queries": len(qids)}
            for name in settings:
                config = SETTINGS[name]
                tokenizer = {"name": "auto", config["name"]: config, "word": {"name": "word"}}
                with Collection.create(
                    Path(tmp) / f"{set_name}-{name}",
                    args.model,
                    encoder=cached,
                    tokenizer=tokenizer,
                    chunking={"enabled": False},
                ) as col:
                    col.add(list(data.corpus), list(data.corpus.values()), batch_size=32)
                    scores = judge(col, qids, data)
                cached.save()
                results[set_name][name] = {mode: scores[mode] for mode in ("hybrid", "lexical")}
                print(
                    f"{set_name:14s} {name:12s} hybrid nDCG@10 {scores['hybrid']['ndcg@10']:.4f}  "
                    f"BM25 nDCG@10 {scores['lexical']['ndcg@10']:.4f}",
                    flush=True,
                )
            results[set_name]["minus_baseline"] = {
                name: {
                    mode: {
                        m: round(
                            results[set_name][name][mode][m] - results[set_name][args.baseline][mode][m], 4
                        )
                        for m in METRICS
                    }
                    for mode in ("hybrid", "lexical")
                }
                for name in settings
                if name != args.baseline
            }
    worst = {
        name: min(
            d for r in results.values() for mode in r["minus_baseline"][name].values() for d in mode.values()
        )
        for name in settings
        if name != args.baseline
    }
    speed = speeds(settings, sample)
    for name, change in worst.items():
        print(f"{name:12s} worst change against {args.baseline}, any set, mode and metric: {change:+.4f}")
    write_result(
        args.name,
        {
            "model": args.model,
            "settings": {name: SETTINGS[name] for name in settings},
            "baseline": args.baseline,
            "load": load,
            "speed": speed,
            "sets": results,
            "worst": worst,
        },
        env,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
