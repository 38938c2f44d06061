"""AutoRAG-ko document retrieval through a munjang collection: 720 Korean OCR'd pages, 114 questions,
each answered by one page. BM25 (Kiwi), dense (e5-small), the default hybrid, and hybrid + rerank
(with --cross-encoder), for each way of cutting pages: added whole (the encoder truncates them at its
window); the collection's default (128-token passages, each BM25-indexed with its window of the page,
`passages.py`) and the same at 64 and 256 tokens; passages at the window, or at 256 / 128 / 64 tokens
with BM25 over the passage alone; late chunking. Recall@1/3/5/10 as AutoRAG computes it (the share
of a question's pages found in the top k: comparable with the published table in
../shared/data/autorag-ko/README.md), nDCG@10, MRR@10, and search latency per question.

    python bench/autorag.py                         # every chunking setting, no rerank
    python bench/autorag.py --chunking default --methods hybrid --cross-encoder runs/ce-korsts-e5/best \
        --name autorag_rerank
    python bench/autorag.py --chunking window,128 --name autorag_colbert \
        --multi-vector-model ~/.cache/munjang/bench/korean-colbert-e5-small
    python bench/autorag.py --chunking default,whole --backend qdrant+local:///tmp/autorag-qdrant \
        --name autorag-qdrant                       # the same rows on another storage backend

With --multi-vector-model the collections also hold a ColBERT (a third retriever, `multi_vector`), and
`hybrid` fuses BM25, dense and ColBERT at the collection's default fusion (equal weights, z-score). The
two-retriever rows are the same hybrid with one weight at zero (that retriever still runs, so its
time is in their latency): `hybrid-bm25+colbert` (dense 0), `hybrid-dense+bm25` (ColBERT 0),
`hybrid-dense+colbert` (BM25 0). Without --methods such a run has every one of these rows.

Collections are kept in --cache (default: a folder in the temp dir) and reused by later runs with the
same settings; --rebuild builds them again.

Where the automatic backend encodes in a reduced precision, each setting's hybrid also runs with queries
encoded in exact torch fp32 (`hybrid-fp32-queries`): a near-tie can go either way.

Only the page text goes into the collection (no file names or titles), as in the published runs.

--backend postgres builds the collections in a PostgreSQL (pgserver's, started in --cache), where
dense, BM25 and filters run in SQL: its figures should equal the folder backend's.

    python bench/autorag.py --chunking default --name autorag-folder-default
    python bench/autorag.py --chunking default --backend postgres --name autorag-postgres-default
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
from munjang.search.collection.collection import Collection

MODEL = "multilingual-e5-small"
EXACT = ("torch", "fp32")
# Name -> chunking settings of the collection. "whole": one passage per page, truncated by the model;
# "default": the collection's default; "default-N": the same at N tokens; "window" and plain "N":
# passages of that size, BM25 over each passage alone.
ALONE = {"lexical_context": "passage"}
CHUNKINGS: dict[str, dict[str, Any]] = {
    "whole": {"enabled": False},
    "default": {},
    "default-64": {"max_tokens": 64},
    "default-256": {"max_tokens": 256},
    "window": {"max_tokens": None},
    "256": {"max_tokens": 256, **ALONE},
    "128": {"max_tokens": 128, **ALONE},
    "64": {"max_tokens": 64, **ALONE},
    "default-late": {"late": True},
    "late-128": {"max_tokens": 128, "late": True, **ALONE},
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


def model_stamp(folder: str | None) -> list[Any] | None:
    """What names a multi-vector model in the cache key: its resolved folder and its weights' size and
    modification time (a model trained again gets new collections)."""
    if folder is None:
        return None
    path = Path(folder).expanduser().resolve()
    weights = path / "model.safetensors"
    stat = weights.stat() if weights.exists() else None
    return [str(path), stat.st_size if stat else None, stat.st_mtime_ns if stat else None]


def build(
    cache: Path,
    name: str,
    pages: dict[str, str],
    encoder: Any,
    rebuild: bool,
    multi_vector: tuple[str, Any] | None = None,
    url: str | None = None,
) -> tuple[Collection, float | None]:
    """The collection for one chunking setting (with a multi-vector model when `multi_vector` gives
    its folder and loaded encoder): from the cache, or built (and its build time). With `url` (a
    backend URL) the collection lives there, named like the cache folder."""
    mv_model, mv_encoder = multi_vector if multi_vector else (None, None)
    parts: list[Any] = [MODEL, CHUNKINGS[name], munjang.__version__]
    if mv_model is not None:
        parts.append(model_stamp(mv_model))
    key = hashlib.sha256(json.dumps(parts).encode()).hexdigest()
    folder: Any = cache / f"{name}-{key[:12]}"
    if url is not None:  # a collection in a database, named like the folder
        folder = f"autorag_{name.replace('-', '_')}_{key[:12]}"
        if folder in Collection.names(url) and not rebuild:
            return Collection.open(
                folder, backend=url, encoder=encoder, multi_vector_encoder=mv_encoder
            ), None
        if folder in Collection.names(url):
            raise SystemExit(f"{folder} exists in {url}: remove it (or use another --cache) to rebuild")
    elif folder.exists() and not rebuild:
        return Collection.open(folder, encoder=encoder, multi_vector_encoder=mv_encoder), None
    else:
        shutil.rmtree(folder, ignore_errors=True)
    start = time.perf_counter()
    extra = {"multi_vector_model": mv_model, "multi_vector_encoder": mv_encoder} if mv_model else {}
    col = Collection.create(folder, MODEL, backend=url, encoder=encoder, chunking=CHUNKINGS[name], **extra)
    col.add(list(pages), list(pages.values()), show_progress_bar=True, batch_size=16, commit_every=100)
    return col, round(time.perf_counter() - start, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunking", default=",".join(CHUNKINGS), help="settings to run (comma-separated)")
    parser.add_argument("--cross-encoder", default=None, help="cross-encoder folder for the rerank rows")
    parser.add_argument("--rerank-k", type=int, default=20)
    parser.add_argument(
        "--methods",
        default=None,
        help="retrievers to run (comma-separated); default bm25,dense,hybrid, and with --multi-vector-model "
        "also multi_vector and the two-retriever hybrids",
    )
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "munjang-bench-autorag")
    parser.add_argument("--rebuild", action="store_true", help="build the collections again")
    parser.add_argument(
        "--backend",
        default="folder",
        help="folder (default), postgres (pgserver's, started in --cache) or a backend URL "
        "(e.g. qdrant+local://FOLDER)",
    )
    parser.add_argument("--name", default="autorag", help="result file name (bench/results/NAME.json)")
    parser.add_argument(
        "--multi-vector-model",
        default=None,
        help="a ColBERT folder: collections hold it as a third retriever",
    )
    args = parser.parse_args(argv)
    env = print_environment()
    url = None if args.backend == "folder" else args.backend
    if args.backend == "postgres":
        import pgserver

        args.cache.mkdir(parents=True, exist_ok=True)
        url = pgserver.get_server(args.cache / "pg", cleanup_mode="stop").get_uri()
    pages, questions, relevant = load_autorag()
    print(f"AutoRAG-ko: {len(pages)} pages, {len(questions)} questions", flush=True)
    encoder = munjang.load_encoder(MODEL)
    known: dict[str, dict[str, Any]] = {
        "bm25": {"mode": "lexical"},
        "dense": {"mode": "dense"},
        "hybrid": {"mode": "hybrid"},
        "hybrid-rrf": {"mode": "hybrid", "fusion": "rrf"},
    }
    multi_vector = None
    if args.multi_vector_model:
        from munjang.encoders.multi_vector import load_multi_vector_encoder

        mv_model = str(Path(args.multi_vector_model).expanduser())
        multi_vector = (mv_model, load_multi_vector_encoder(mv_model))
        # Hybrid weights follow Collection.retrievers("hybrid"): dense, lexical, multi_vector.
        known["multi_vector"] = {"mode": "multi_vector"}
        known["hybrid-bm25+colbert"] = {"mode": "hybrid", "weights": (0.0, 0.5, 0.5)}
        known["hybrid-dense+bm25"] = {"mode": "hybrid", "weights": (0.5, 0.5, 0.0)}
        known["hybrid-dense+colbert"] = {"mode": "hybrid", "weights": (0.5, 0.0, 0.5)}
    wanted = args.methods.split(",") if args.methods else ["bm25", "dense", "hybrid"]
    if multi_vector is not None and not args.methods:
        wanted = [
            "bm25",
            "dense",
            "multi_vector",
            "hybrid",
            *(m for m in known if m.startswith("hybrid-") and "+" in m),
        ]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        parser.error(f"unknown methods {unknown}; choose from {', '.join(known)}")
    methods = {name: known[name] for name in wanted}
    if args.cross_encoder:
        reranker = munjang.load_cross_encoder(args.cross_encoder)
        methods["hybrid+rerank"] = {"mode": "hybrid", "rerank": reranker, "rerank_k": args.rerank_k}
    results: dict[str, Any] = {}
    for name in args.chunking.split(","):
        col, build_s = build(args.cache, name, pages, encoder, args.rebuild, multi_vector, url)
        if multi_vector is not None:
            assert col.retrievers("hybrid") == ["dense", "lexical", "multi_vector"], col.retrievers("hybrid")
        row: dict[str, Any] = {"passages": col.info()["passages"], "build_s": build_s}
        for method, search in methods.items():
            row[method] = run_method(col, questions, relevant, **search)
            m = row[method]
            print(
                f"{name:>9} {method:<20} R@1 {m['recall@1']:.3f} R@3 {m['recall@3']:.3f} "
                f"R@5 {m['recall@5']:.3f} R@10 {m['recall@10']:.3f} nDCG@10 {m['ndcg@10']:.3f} "
                f"p50 {m['latency_ms_p50']} ms",
                flush=True,
            )
        if "hybrid" in methods and encoder.configuration() != EXACT:
            # The same search with queries encoded in exact fp32: how much of R@1 rests on near-ties
            # that the automatic backend's rounding decides.
            encoder.set_backend(*EXACT)
            try:
                row["hybrid-fp32-queries"] = m = run_method(col, questions, relevant, **methods["hybrid"])
            finally:
                encoder.set_backend("auto")
            print(f"{name:>9} {'hybrid-fp32-queries':<20} R@1 {m['recall@1']:.3f} nDCG@10 {m['ndcg@10']:.3f}")
        col.close()
        results[name] = row
    path = write_result(
        args.name,
        {
            "model": MODEL,
            "backend": args.backend or "folder",
            "multi_vector_model": model_stamp(args.multi_vector_model),
            "hybrid_weights_order": ["dense", "lexical", "multi_vector"] if multi_vector else None,
            "cross_encoder": args.cross_encoder,
            "rerank_k": args.rerank_k,
            "results": results,
        },
        env,
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
