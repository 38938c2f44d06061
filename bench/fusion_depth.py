"""How the hybrid default's quality depends on how many candidates each retriever hands to fusion.

The default fusion (weighted, z-score, equal weights) normalizes each retriever's scores over the list
it returns, so the list's length is part of the fusion: a search over documents stored as passages
asks each retriever for 4 passages a candidate (400 for the default 100 candidates), one over
documents stored whole for 100. On the five Korean retrieval sets of bench/korean_retrieval.py
(documents whole, multilingual-e5-small, the same query samples) each query's dense and BM25 top 400
are retrieved once through a Collection and cached; the default fusion is then scored with each list
cut to its best 100, 200 and 400 (what `Collection.search(candidates=...)` would fuse), nDCG@10 and
Recall@1/5/10, with the per-query difference 400 - 100 and its 95 % bootstrap interval.

    python bench/fusion_depth.py            # ~25 min the first time on 2 cores (the candidates), then seconds

The cache lives in $TMPDIR/munjang-bench-cache/fusion_depth (--cache-dir).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import korean_retrieval as kr
from common import print_environment, write_result
from munjang.search.collection.search import HYBRID_FUSION, HYBRID_NORMALIZATION, HYBRID_WEIGHTS
from munjang.search.index.fusion import fuse

DEPTHS = (100, 200, 400)
METRICS = ("ndcg@10", "recall@1", "recall@5", "recall@10")


def fused(cand: dict[str, Any], depth: int) -> list[list[str]]:
    """The default fusion of each query's dense and BM25 lists cut to their best `depth`."""
    out = []
    for dense, bm25 in zip(cand["dense"], cand["bm25"], strict=True):
        hits = fuse(
            [[(d, s) for d, s in dense[:depth]], [(d, s) for d, s in bm25[:depth]]],
            method=HYBRID_FUSION,
            weights=HYBRID_WEIGHTS,
            normalization=HYBRID_NORMALIZATION,
            top_k=depth,
        )
        out.append([str(h.key) for h in hits])
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(kr.KOREAN))
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "munjang-bench-cache" / "fusion_depth"
    )
    parser.add_argument("--name", default="fusion_depth")
    args = parser.parse_args(argv)
    environment = print_environment()
    kr.DEPTH = max(DEPTHS)  # the candidates are retrieved (and cached) at the deepest cut
    state: dict[str, Any] = {}
    results: dict[str, Any] = {}
    for name in args.sets.split(","):
        print(f"{name}:", flush=True)
        n = kr.DEFAULT_QUERIES.get(name)
        cand, _ = kr.candidates(name, args.model, n, args.seed, args.cache_dir, state, False)
        per_depth = {depth: kr.per_query(cand, fused(cand, depth)) for depth in DEPTHS}
        row: dict[str, Any] = {"queries": len(cand["qids"]), "corpus": cand["corpus"]}
        for depth, scores in per_depth.items():
            row[str(depth)] = {m: round(float(np.mean(scores[m])), 4) for m in METRICS}
        for m in ("ndcg@10", "recall@1"):
            diff = np.asarray(per_depth[400][m]) - np.asarray(per_depth[100][m])
            row[f"{m} 400-100"] = {"mean": round(float(diff.mean()), 4), "ci95": kr.bootstrap_ci(diff)}
        results[name] = row
        print(f"  {row}", flush=True)
    payload = {"model": args.model, "depths": DEPTHS, "sets": results}
    print(f"wrote {write_result(args.name, payload, environment)}")


if __name__ == "__main__":
    main()
