"""Search quality through a persistent collection: BM25 (Kiwi / words), dense (e5-small), hybrid (RRF and
weighted) and hybrid + cross-encoder rerank, on retrieval sets built from KorSTS test (Korean) and STSb
test (English): nDCG@10, Recall@10, MRR@10. Fusion weights are chosen on the dev split, then applied to test.

The sets (munjang.data.sts_retrieval_set): every pair with gold score >= 4 makes its sentence1 a query whose
relevant document is its sentence2; the corpus is every distinct sentence2 of the split. Everything runs
through `munjang.search.Collection`, the same path as `munjang index search`.

    python bench/search_quality.py                                   # both languages, all methods
    python bench/search_quality.py --cross-encoder runs/ce-relevance-e5/final

e5 is used with its "query: " prompt on both sides (paraphrase retrieval is a symmetric task, as the e5 card
advises). The cross-encoder re-orders the --rerank-k (10) best hybrid results (on --rerank-sets, default
KorSTS only: the cross-encoders here are trained on Korean). The rerank rows need a cross-encoder folder:
bench/cross_encoder_relevance.py trains the default one (runs/ce-relevance-e5/final); without it they are
left out and the JSON says so.
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
from common import print_environment, shared_data_dir, write_result
from munjang.data import sts_retrieval_set
from munjang.evaluation.retrieval import evaluate_rankings
from munjang.search.collection.collection import Collection
from munjang.search.index.fusion import fuse

SETS = {
    "korsts": ("korsts/sts-test.tsv", "ko"),
    "stsb": ("stsb/sts-test.csv", "en"),
}
METRICS = ("ndcg@10", "recall@10", "mrr@10", "recall@100")


WEIGHTS = (0.5, 0.6, 0.7, 0.8, 0.9)


def _collection(data: Any, path: Path, encoder: Any, encoder_path: str) -> Collection:
    col = Collection.create(
        path, encoder_path, encoder=encoder, query_prompt_name="query", document_prompt_name="query"
    )
    texts = data.corpus_texts()
    col.add(list(texts), list(texts.values()), show_progress_bar=True, batch_size=64)
    return col


def _evaluate(rankings: dict[str, list[str]], relevant: dict[str, set[str]]) -> dict[str, float]:
    metrics = evaluate_rankings(rankings, relevant, k_values=(1, 10, 100))
    return {m: round(metrics[m], 4) for m in METRICS}


def tune_fusion(col: Collection, data: Any) -> dict[str, Any]:
    """Pick each fusion's dense weight (lexical = 1 - w) by nDCG@10 on the dev split.

    Dense and BM25 lists are retrieved once (top 100, as the collection's hybrid mode does) and fused
    with the same `fuse` function the collection calls."""
    relevant = data.relevant_docs()
    qids = list(relevant)
    texts = [data.queries[q] for q in qids]
    dense = col.search(texts, k=100, mode="dense")
    lexical = col.search(texts, k=100, mode="lexical")
    grid: dict[str, dict[str, float]] = {}
    for fusion in ("rrf", "weighted"):
        for w in WEIGHTS:
            rankings = {}
            for qid, d_hits, l_hits in zip(qids, dense, lexical, strict=True):
                fused = fuse(
                    [[(h.id, h.score) for h in d_hits], [(h.id, h.score) for h in l_hits]],
                    method=fusion,
                    weights=[w, 1 - w],
                    top_k=100,
                )
                rankings[qid] = [str(h.key) for h in fused]
            grid[f"{fusion} w_dense={w}"] = _evaluate(rankings, relevant)
    best = {
        fusion: max(WEIGHTS, key=lambda w, f=fusion: grid[f"{f} w_dense={w}"]["ndcg@10"])
        for fusion in ("rrf", "weighted")
    }
    return {"grid": grid, "best_dense_weight": best}


def _methods(rerank: Any, best: dict[str, float], rerank_k: int) -> dict[str, dict[str, Any]]:
    rrf = {"mode": "hybrid", "fusion": "rrf", "weights": [best["rrf"], 1 - best["rrf"]]}
    weighted = {"mode": "hybrid", "fusion": "weighted", "weights": [best["weighted"], 1 - best["weighted"]]}
    methods: dict[str, dict[str, Any]] = {
        "bm25": {"mode": "lexical"},
        "dense": {"mode": "dense"},
        "hybrid_rrf_equal": {"mode": "hybrid", "fusion": "rrf", "weights": [0.5, 0.5]},
        "hybrid_weighted_equal": {"mode": "hybrid", "fusion": "weighted", "weights": [0.5, 0.5]},
        "hybrid_rrf_tuned": rrf,
        "hybrid_weighted_tuned": weighted,
    }
    if rerank is not None:
        methods["hybrid_weighted_tuned_rerank"] = {**weighted, "rerank": rerank, "rerank_k": rerank_k}
    return methods


def run_set(
    name: str, encoder: Any, encoder_path: str, rerank: Any, rerank_k: int, workdir: Path
) -> dict[str, Any]:
    test_file, lang = SETS[name]
    dev = sts_retrieval_set(shared_data_dir() / test_file.replace("sts-test", "sts-dev"))
    test = sts_retrieval_set(shared_data_dir() / test_file)
    print(f"\n[{name}] dev: {dev.stats()}  test: {test.stats()}")
    with _collection(dev, workdir / f"{name}-dev", encoder, encoder_path) as dev_col:
        tuning = tune_fusion(dev_col, dev)
    print(f"  dense weight chosen on dev: {tuning['best_dense_weight']}")
    relevant = test.relevant_docs()
    qids = list(relevant)
    texts = [test.queries[q] for q in qids]
    out: dict[str, Any] = {"lang": lang, "counts": test.counts, "dev_tuning": tuning, "methods": {}}
    start = time.perf_counter()
    col = _collection(test, workdir / name, encoder, encoder_path)
    out["index_seconds"] = round(time.perf_counter() - start, 2)
    for method, options in _methods(rerank, tuning["best_dense_weight"], rerank_k).items():
        start = time.perf_counter()
        results = col.search(texts, k=100, **{"candidates": 100, **options})
        seconds = time.perf_counter() - start
        row: dict[str, Any] = _evaluate(
            {qid: [h.id for h in hits] for qid, hits in zip(qids, results, strict=True)}, relevant
        )
        row["ms_per_query"] = round(1000 * seconds / len(qids), 2)
        if "weights" in options:
            row["weights"] = options["weights"]
        out["methods"][method] = row
        shown = "  ".join(f"{m} {row[m]:.4f}" for m in METRICS)
        print(f"  {method:<24}{shown}  {row['ms_per_query']} ms/q")
    col.close()
    best_single = max(out["methods"]["bm25"]["ndcg@10"], out["methods"]["dense"]["ndcg@10"])
    out["hybrid_not_below_best_single"] = {
        m: out["methods"][m]["ndcg@10"] >= best_single for m in out["methods"] if m.startswith("hybrid")
    }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default="multilingual-e5-small")
    parser.add_argument("--cross-encoder", default="runs/ce-relevance-e5/final")
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument(
        "--rerank-k", type=int, default=10, help="hybrid candidates the cross-encoder re-orders"
    )
    parser.add_argument("--rerank-sets", nargs="*", default=["korsts"], choices=list(SETS))
    parser.add_argument("--name", default="search_quality")
    args = parser.parse_args(argv)
    env = print_environment()
    encoder = munjang.load_encoder(args.encoder, device="cpu")
    rerank = None
    if args.cross_encoder and Path(args.cross_encoder).exists():
        rerank = munjang.load_cross_encoder(args.cross_encoder, device="cpu")
    else:
        print(f"no cross-encoder at {args.cross_encoder}: rerank rows left out")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets:
            cross = rerank if name in args.rerank_sets else None
            results[name] = run_set(name, encoder, args.encoder, cross, args.rerank_k, Path(tmp))
    payload = {
        "encoder": args.encoder,
        "cross_encoder": args.cross_encoder if rerank is not None else None,
        "prompts": {"query": "query", "document": "query"},
        "rerank_k": args.rerank_k,
        "rerank_sets": args.rerank_sets if rerank is not None else [],
        "results": results,
    }
    path = write_result(args.name, payload, env)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
