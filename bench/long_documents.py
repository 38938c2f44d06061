"""A second set of long Korean documents, to check the collection's passage settings away from
AutoRAG-ko (the one real set of long Korean documents at hand, where they were chosen): pages built
from ParaKQC. Each of its 1,000 sets holds 10 paraphrases of one question or command; a page is a
seeded shuffle of sections, one section being sentences 1-9 of one set, 3 sections per page (about
330 tokens, under e5-small's window). A query is sentence 0 of a set; the one relevant page holds
the rest of that set. So a page covers a few topics and a question targets one, as on a real page.

BM25 (Kiwi), dense (e5-small) and the default hybrid through a collection, for the chunking
settings of bench/autorag.py; Recall@1, Recall@5, nDCG@10, MRR@10.

    python bench/long_documents.py            # writes bench/results/long_documents.json
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from autorag import CHUNKINGS, MODEL
from common import print_environment, shared_data_dir, write_result
from munjang.evaluation.retrieval import evaluate_rankings
from munjang.search.collection.collection import Collection

SECTIONS_PER_PAGE = 3
SETTINGS = ("default", "default-64", "default-256", "window", "128", "whole")


def parakqc_pages(seed: int) -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    """(page id -> text, query id -> query, query id -> its relevant page)."""
    lines = (shared_data_dir() / "parakqc" / "paraKQC_v1.txt").read_text(encoding="utf-8").splitlines()
    sentences = [line.split("\t")[2].strip() for line in lines]
    if len(sentences) != 10000:
        raise ValueError(f"paraKQC_v1.txt has {len(sentences)} lines, expected 10,000")
    order = list(range(1000))
    random.Random(seed).shuffle(order)
    pages: dict[str, str] = {}
    page_of: dict[int, str] = {}
    for start in range(0, len(order), SECTIONS_PER_PAGE):
        page = f"p{start // SECTIONS_PER_PAGE:04d}"
        sets = order[start : start + SECTIONS_PER_PAGE]
        pages[page] = " ".join(sentences[10 * s + j] for s in sets for j in range(1, 10))
        page_of.update(dict.fromkeys(sets, page))
    queries = {f"q{s:04d}": sentences[10 * s] for s in range(1000)}
    relevant = {f"q{s:04d}": {page_of[s]} for s in range(1000)}
    return pages, queries, relevant


def run(col: Collection, queries: dict[str, str], relevant: dict[str, set[str]], mode: str) -> dict[str, Any]:
    ids = list(queries)
    hits = col.search([queries[q] for q in ids], k=10, mode=mode)
    rankings = {q: [h.id for h in row] for q, row in zip(ids, hits, strict=True)}
    metrics = evaluate_rankings(rankings, relevant, k_values=(1, 5, 10))
    return {
        "recall@1": round(metrics["recall@1"], 4),
        "recall@5": round(metrics["recall@5"], 4),
        "ndcg@10": round(metrics["ndcg@10"], 4),
        "mrr@10": round(metrics["mrr@10"], 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunking", default=",".join(SETTINGS), help="bench/autorag.py settings to run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="long_documents")
    args = parser.parse_args(argv)
    env = print_environment()
    pages, queries, relevant = parakqc_pages(args.seed)
    print(f"ParaKQC pages: {len(pages)} pages, {len(queries)} queries", flush=True)
    encoder = munjang.load_encoder(MODEL)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.chunking.split(","):
            folder = Path(tmp) / name
            started = time.perf_counter()
            col = Collection.create(folder, MODEL, encoder=encoder, chunking=CHUNKINGS[name])
            col.add(list(pages), list(pages.values()), batch_size=16)
            row: dict[str, Any] = {
                "passages": col.info()["passages"],
                "build_s": round(time.perf_counter() - started, 1),
            }
            for method, mode in (("bm25", "lexical"), ("dense", "dense"), ("hybrid", "hybrid")):
                row[method] = m = run(col, queries, relevant, mode)
                print(
                    f"{name:>11} {method:<7} R@1 {m['recall@1']:.3f} R@5 {m['recall@5']:.3f} "
                    f"nDCG@10 {m['ndcg@10']:.3f} MRR@10 {m['mrr@10']:.3f}",
                    flush=True,
                )
            col.close()
            shutil.rmtree(folder, ignore_errors=True)
            results[name] = row
    path = write_result(
        args.name,
        {
            "model": MODEL,
            "construction": {"sections_per_page": SECTIONS_PER_PAGE, "seed": args.seed, "pages": len(pages)},
            "results": results,
        },
        env,
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
