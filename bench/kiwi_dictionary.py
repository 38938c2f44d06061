"""Kiwi with or without its multi-word dictionary: what it costs to load, and what it does to search.

kiwipiepy loads a multi-word dictionary by default, which turns some proper-noun phrases into one
token ("뉴 노멀", "홀 푸드 마켓"). Loading it more than doubles the time a new process spends before
its first Korean query, and Kiwi holds the interpreter lock throughout. This measures both sides:

- load: a fresh process per setting and round builds Kiwi and analyses one sentence; its CPU
  seconds and peak RSS (the setting's own cost, whatever else runs on the machine);
- quality: each Korean retrieval set of bench/korean_retrieval.py in a folder collection per setting
  (documents whole, the same cached multilingual-e5-small vectors: only the tokens differ), answered
  in the default hybrid mode and by BM25 alone, nDCG@10 and recall@1/5/10.

    python bench/kiwi_dictionary.py
    python bench/kiwi_dictionary.py --sets autorag,korsts --rounds 5

The vector cache is bench/backend_quality.py's ($TMPDIR/munjang-bench-cache/backend_quality).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from backend_quality import METRICS, CachedEncoder, judge
from common import print_environment, write_result
from korean_retrieval import DEFAULT_QUERIES, KOREAN, LOADERS

SETTINGS = {"without": False, "with": True}  # the multi-word dictionary: munjang's default first

LOAD_PROBE = """
import json, resource, sys, time
from kiwipiepy import Kiwi
cpu, wall = time.process_time(), time.perf_counter()
Kiwi(load_multi_dict={multi}).tokenize("한국어 형태소 분석기로 문장을 나눈다")
print(json.dumps({{"cpu_s": time.process_time() - cpu, "wall_s": time.perf_counter() - wall,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def load_costs(rounds: int) -> dict[str, Any]:
    """Per setting: the median CPU seconds, wall seconds and peak RSS of `rounds` fresh processes."""
    out: dict[str, Any] = {}
    for name, multi in SETTINGS.items():
        runs = [
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", LOAD_PROBE.format(multi=multi)],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            for _ in range(rounds)
        ]
        out[name] = {k: round(float(np.median([r[k] for r in runs])), 3) for k in runs[0]}
        print(f"load {name:8s} multi-word dictionary: {out[name]}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(KOREAN))
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per load measurement")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "munjang-bench-cache")
    parser.add_argument("--name", default="kiwi_dictionary")
    args = parser.parse_args(argv)
    env = print_environment()
    import munjang
    from munjang.search.collection.collection import Collection
    from munjang.search.index.tokenizers import AutoTokenizer, KiwiTokenizer

    load = load_costs(args.rounds)
    encoder = munjang.load_encoder(args.model, device="cpu")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for set_name in args.sets.split(","):
            data = LOADERS[set_name]().sample(DEFAULT_QUERIES.get(set_name), args.seed)
            qids = sorted(data.qrels)
            vectors = args.cache_dir / "backend_quality" / f"{set_name}-{args.model}.npz"
            cached = CachedEncoder(encoder, vectors)
            results[set_name] = {"corpus": len(data.corpus), "queries": len(qids)}
            for name, multi in SETTINGS.items():
                tokenizer = AutoTokenizer(kiwi=KiwiTokenizer(multi_words=multi)).get_config_dict()
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
                    f"{set_name:14s} {name:8s} hybrid nDCG@10 {scores['hybrid']['ndcg@10']:.4f}  "
                    f"BM25 nDCG@10 {scores['lexical']['ndcg@10']:.4f}",
                    flush=True,
                )
            results[set_name]["without_minus_with"] = {
                mode: {
                    m: round(results[set_name]["without"][mode][m] - results[set_name]["with"][mode][m], 4)
                    for m in METRICS
                }
                for mode in ("hybrid", "lexical")
            }
    worst = min(
        d for r in results.values() for mode in r["without_minus_with"].values() for d in mode.values()
    )
    print(f"load CPU without / with: {load['without']['cpu_s']} / {load['with']['cpu_s']} s")
    print(f"worst change without the dictionary, any set, mode and metric: {worst:+.4f}")
    write_result(
        args.name,
        {"model": args.model, "load": load, "sets": results, "worst_change_without": worst},
        env,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
