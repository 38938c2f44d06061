"""Retrieve & rerank on a Korean retrieval set built from KorSTS test: nDCG@10 and MRR@10 for the bi-encoder
alone and for bi-encoder + cross-encoder.

The set: every KorSTS test pair with gold score >= 4 gives a query (sentence1) whose relevant document is
its sentence2; the corpus is every distinct sentence2 of the split. The bi-encoder retrieves the top
--retrieve-k (100) for each query, the cross-encoder re-orders those candidates.

    python bench/rerank_korsts.py                          # e5-small + runs/ce-korsts-e5/best
    python bench/rerank_korsts.py --encoder runs/korsts-e5/best --cross-encoder runs/ce-korsts-e5/best

Run bench/cross_encoder_korsts.py first (it trains the cross-encoder into runs/ce-korsts-e5/best).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import munjang
from common import print_environment, shared_data_dir, write_result
from munjang.data import read_sts
from munjang.evaluation.retrieval_metrics import mean_metrics
from munjang.search import RetrieveAndRerank

KS = (1, 10, 100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default="multilingual-e5-small")
    parser.add_argument("--cross-encoder", default="runs/ce-korsts-e5/best")
    parser.add_argument("--prompt-name", default="query", help="encoder prompt for queries and documents")
    parser.add_argument("--min-score", type=float, default=4.0)
    parser.add_argument("--retrieve-k", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--name", default="rerank_korsts")
    args = parser.parse_args(argv)
    env = print_environment()

    test = read_sts(shared_data_dir() / "korsts" / "sts-test.tsv")
    corpus = list(dict.fromkeys(test.sentences2))
    relevant: dict[str, set[str]] = defaultdict(set)
    for s1, s2, score in zip(test.sentences1, test.sentences2, test.scores, strict=True):
        if score >= args.min_score:
            relevant[s1].add(s2)
    queries = list(relevant)
    print(f"{len(queries)} queries (pairs with score >= {args.min_score}), corpus of {len(corpus)} sentences")

    encoder = munjang.load_encoder(args.encoder, device="cpu")
    cross = munjang.load_cross_encoder(args.cross_encoder, device="cpu")
    start = time.perf_counter()
    pipeline = RetrieveAndRerank(
        encoder,
        cross,
        corpus,
        retrieve_k=args.retrieve_k,
        query_prompt_name=args.prompt_name,
        corpus_prompt_name=args.prompt_name,
        batch_size=args.batch_size,
        show_progress_bar=True,
    )
    retrieved = pipeline.retrieve(queries)
    retrieve_seconds = time.perf_counter() - start
    start = time.perf_counter()
    reranked = pipeline.search(queries, top_k=args.retrieve_k)
    rerank_seconds = time.perf_counter() - start
    gold = [relevant[q] for q in queries]
    bi = mean_metrics([[h.text for h in hits] for hits in retrieved], gold, ks=KS)
    both = mean_metrics([[h.text for h in hits] for hits in reranked], gold, ks=KS)  # type: ignore[union-attr]
    print(f"{'':<28}{'nDCG@10':>9}{'MRR@10':>9}{'R@1':>8}{'R@100':>8}")
    for label, m in (("bi-encoder", bi), ("bi-encoder + cross-encoder", both)):
        print(f"{label:<28}{m['ndcg@10']:9.4f}{m['mrr@10']:9.4f}{m['recall@1']:8.4f}{m['recall@100']:8.4f}")
    print(f"retrieval {retrieve_seconds:.1f} s (corpus encode included), reranking {rerank_seconds:.1f} s")
    write_result(
        args.name,
        {
            "encoder": args.encoder,
            "cross_encoder": args.cross_encoder,
            "prompt_name": args.prompt_name,
            "queries": len(queries),
            "corpus": len(corpus),
            "min_score": args.min_score,
            "retrieve_k": args.retrieve_k,
            "bi_encoder": bi,
            "bi_encoder_plus_cross_encoder": both,
            "retrieve_seconds": retrieve_seconds,
            "rerank_seconds": rerank_seconds,
        },
        env=env,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
