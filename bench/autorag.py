"""AutoRAG-ko document retrieval through a munjang collection: 720 Korean OCR'd pages, 114 questions,
each answered by one page. BM25 (Kiwi), dense (e5-small), the default hybrid, and hybrid + rerank
(with --cross-encoder), each with pages added whole (the encoder truncates them at its window), split
into passages where longer than the window (the default), split into smaller passages, and with late
chunking. Recall@1/3/5/10 as AutoRAG computes it (the share of a question's pages found in the top
k: comparable with the published table in ../shared/data/autorag-ko/README.md), nDCG@10, MRR@10,
and search latency per question.

    python bench/autorag.py                         # every chunking setting, no rerank
    python bench/autorag.py --chunking window --methods hybrid --cross-encoder runs/ce-korsts-e5/best \
        --name autorag_rerank
    python bench/autorag.py --chunking window,128 --methods bm25,dense --split window:128 \
        --name autorag_split      # BM25 over one passage size, dense over another, fused per page

Collections are kept in --cache (default: a folder in the temp dir) and reused by later runs with the
same settings; --rebuild builds them again.

Only the page text goes into the collection (no file names or titles), as in the published runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import print_environment, shared_data_dir, write_result
from munjang.evaluation.retrieval import evaluate_rankings
from munjang.search.collection import Collection

MODEL = "multilingual-e5-small"
# Name -> chunking settings of the collection. "whole": one passage per page, truncated by the model.
CHUNKINGS: dict[str, dict[str, Any]] = {
    "whole": {"enabled": False},
    "window": {},
    "256": {"max_tokens": 256},
    "128": {"max_tokens": 128},
    "late-128": {"max_tokens": 128, "late": True},
}
KS = (1, 3, 5, 10)


def load_autorag() -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    """(page id -> text, question id -> question, question id -> relevant page ids)."""
    import pandas as pd

    folder = shared_data_dir() / "autorag-ko"
    corpus = pd.read_parquet(folder / "ocr_corpus_v3.parquet")
    qa = pd.read_parquet(folder / "qa_v4.parquet")
    pages = dict(zip(corpus["doc_id"], corpus["contents"], strict=True))
    questions = dict(zip(qa["qid"], qa["query"], strict=True))
    relevant = {
        qid: {str(doc) for group in gt for doc in group}
        for qid, gt in zip(qa["qid"], qa["retrieval_gt"], strict=True)
    }
    return pages, questions, relevant


def autorag_recall(rankings: dict[str, list[str]], relevant: dict[str, set[str]], k: int) -> float:
    """AutoRAG's retrieval recall: per question, the share of its pages in the top k; averaged."""
    return statistics.fmean(len(set(rankings[q][:k]) & gold) / len(gold) for q, gold in relevant.items())


def run_method(
    col: Collection, questions: dict[str, str], relevant: dict[str, set[str]], **search: Any
) -> dict[str, Any]:
    rankings: dict[str, list[str]] = {}
    latencies: list[float] = []
    for qid, text in questions.items():
        start = time.perf_counter()
        hits = col.search(text, k=10, **search)
        latencies.append(time.perf_counter() - start)
        rankings[qid] = [h.id for h in hits]
    metrics = evaluate_rankings(rankings, relevant, k_values=KS)
    latencies.sort()
    return {
        **{f"recall@{k}": round(autorag_recall(rankings, relevant, k), 4) for k in KS},
        "ndcg@10": round(metrics["ndcg@10"], 4),
        "mrr@10": round(metrics["mrr@10"], 4),
        "latency_ms_p50": round(1000 * latencies[len(latencies) // 2], 1),
        "latency_ms_p95": round(1000 * latencies[int(len(latencies) * 0.95)], 1),
    }


def split_sizes(
    lexical: Collection, dense: Collection, questions: dict[str, str], relevant: dict[str, set[str]]
) -> dict[str, Any]:
    """Hybrid with BM25 from one collection and dense from another (other passage sizes), each
    ranking pages (best passage), fused per page with the library's default weights and
    normalization: the measure of an idea, not something a collection does."""
    from munjang.search.collection_search import HYBRID_NORMALIZATION, HYBRID_WEIGHTS
    from munjang.search.hybrid import fuse

    rankings: dict[str, list[str]] = {}
    for qid, text in questions.items():
        pairs = ((dense, "dense"), (lexical, "lexical"))
        lists = [[(h.id, h.score) for h in c.search(text, k=50, mode=m)] for c, m in pairs]
        fused = fuse(lists, method="weighted", weights=HYBRID_WEIGHTS, normalization=HYBRID_NORMALIZATION)
        rankings[qid] = [str(h.key) for h in fused[:10]]
    metrics = evaluate_rankings(rankings, relevant, k_values=KS)
    return {
        **{f"recall@{k}": round(autorag_recall(rankings, relevant, k), 4) for k in KS},
        "ndcg@10": round(metrics["ndcg@10"], 4),
        "mrr@10": round(metrics["mrr@10"], 4),
    }


def build(
    cache: Path, name: str, pages: dict[str, str], encoder: Any, rebuild: bool
) -> tuple[Collection, float | None]:
    """The collection for one chunking setting: from the cache, or built (and its build time)."""
    key = hashlib.sha256(json.dumps([MODEL, CHUNKINGS[name], munjang.__version__]).encode()).hexdigest()
    folder = cache / f"{name}-{key[:12]}"
    if folder.exists() and not rebuild:
        return Collection.open(folder, encoder=encoder), None
    shutil.rmtree(folder, ignore_errors=True)
    start = time.perf_counter()
    col = Collection.create(folder, MODEL, encoder=encoder, chunking=CHUNKINGS[name])
    col.add(list(pages), list(pages.values()), show_progress_bar=True, batch_size=16, commit_every=100)
    return col, round(time.perf_counter() - start, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunking", default=",".join(CHUNKINGS), help="settings to run (comma-separated)")
    parser.add_argument("--cross-encoder", default=None, help="cross-encoder folder for the rerank rows")
    parser.add_argument("--rerank-k", type=int, default=20)
    parser.add_argument("--methods", default="bm25,dense,hybrid", help="retrievers to run (comma-separated)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "munjang-bench-autorag")
    parser.add_argument("--rebuild", action="store_true", help="build the collections again")
    parser.add_argument("--name", default="autorag", help="result file name (bench/results/NAME.json)")
    parser.add_argument("--split", default=None, help="LEX:DENSE chunking names for a split-size hybrid row")
    args = parser.parse_args(argv)
    env = print_environment()
    pages, questions, relevant = load_autorag()
    print(f"AutoRAG-ko: {len(pages)} pages, {len(questions)} questions", flush=True)
    encoder = munjang.load_encoder(MODEL)
    known: dict[str, dict[str, Any]] = {
        "bm25": {"mode": "lexical"},
        "dense": {"mode": "dense"},
        "hybrid": {"mode": "hybrid"},
        "hybrid-rrf": {"mode": "hybrid", "fusion": "rrf"},
    }
    methods = {name: known[name] for name in args.methods.split(",")}
    if args.cross_encoder:
        reranker = munjang.load_cross_encoder(args.cross_encoder)
        methods["hybrid+rerank"] = {"mode": "hybrid", "rerank": reranker, "rerank_k": args.rerank_k}
    results: dict[str, Any] = {}
    for name in args.chunking.split(","):
        col, build_s = build(args.cache, name, pages, encoder, args.rebuild)
        row: dict[str, Any] = {"passages": col.info()["passages"], "build_s": build_s}
        for method, search in methods.items():
            row[method] = run_method(col, questions, relevant, **search)
            m = row[method]
            print(
                f"{name:>9} {method:<14} R@1 {m['recall@1']:.3f} R@3 {m['recall@3']:.3f} "
                f"R@5 {m['recall@5']:.3f} R@10 {m['recall@10']:.3f} nDCG@10 {m['ndcg@10']:.3f} "
                f"p50 {m['latency_ms_p50']} ms",
                flush=True,
            )
        col.close()
        results[name] = row
    if args.split:
        lex_name, dense_name = args.split.split(":")
        lex, _ = build(args.cache, lex_name, pages, encoder, False)
        dense, _ = build(args.cache, dense_name, pages, encoder, False)
        m = split_sizes(lex, dense, questions, relevant)
        results[f"split bm25@{lex_name} dense@{dense_name}"] = m
        print(
            f"split bm25@{lex_name} dense@{dense_name}: R@1 {m['recall@1']:.3f} R@5 {m['recall@5']:.3f} "
            f"nDCG@10 {m['ndcg@10']:.3f}",
            flush=True,
        )
    path = write_result(
        args.name,
        {"model": MODEL, "cross_encoder": args.cross_encoder, "rerank_k": args.rerank_k, "results": results},
        env,
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
