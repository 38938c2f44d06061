"""A Korean ColBERT trained from multilingual-e5-small, against e5-small dense on the Korean retrieval sets.

    python bench/korean_colbert.py train      # stops at 500 steps or 60 min; cached in ~/.cache/munjang/bench
    python bench/korean_colbert.py eval       # nDCG@10, Recall@5 per set -> bench/results/korean_colbert.json

Training: e5-small's transformer + a new 128-d token projection, query expansion to 32 tokens, the
e5 prompts ("query: " / "passage: ") as markers, documents cut at --train-doc-length tokens; MaxSim
in-batch negatives (munjang.encoders.multi_vector.fit_colbert) on KLUE-NLI train: an entailment hypothesis is
the query, its premise the document, and another premise mined by Kiwi BM25 a hard negative; the
embeddings and the lower --freeze-layers layers stay frozen. No evaluation set is trained on
(chatbot-qa, ParaKQC and question-pair are evaluation sets here, so they stay out of training).

Evaluation: the Korean sets of bench/korean_retrieval.py (autorag, chatbot, parakqc, question-pair,
korsts), with a seeded sample of --queries of the queries that bench uses and a sub-corpus: every
document relevant to a sampled query plus seeded distractors up to --corpus documents (300 for
AutoRAG's long pages), so that encoding stays within minutes on a shared 2-core machine. Dense is
e5-small with its prompts over whole documents, read from korean_retrieval.py's candidate cache (its
top 100 over the full corpus, the documents outside the sub-corpus left out: exactly dense's ranking
of the sub-corpus while at least 10 remain; where fewer remain for some query, dense searches the
sub-corpus anew with e5-small, as `dense` in the JSON says). ColBERT ranks the
sub-corpus by exact brute-force MaxSim (documents cut at --doc-length tokens; dense reads up to 512).
The PLAID-style index also runs on each set: recall@10 against brute-force MaxSim, latency per query.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, shared_data_dir, write_result
from munjang._util.paths import cache_root

MODEL = "multilingual-e5-small"
SETS = ("autorag", "chatbot", "parakqc", "question-pair", "korsts")
RUN = "korean-colbert-e5-small"
# AutoRAG's documents are whole OCR pages (hundreds of tokens): fewer of them keep the run short.
CORPUS_CAP = {"autorag": 300}


def model_dir() -> Path:
    return cache_root() / "bench" / RUN


def klue_pairs() -> list[tuple[str, str]]:
    """(entailment hypothesis, premise) from KLUE-NLI train."""
    pairs = []
    with gzip.open(shared_data_dir() / "klue-nli" / "klue-nli-train.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["label"] == "entailment":
                pairs.append((row["hypothesis"].strip(), row["premise"].strip()))
    return pairs


def with_hard_negatives(pairs: list[tuple[str, str]], skip: int) -> list[tuple[str, str, str]]:
    """(query, premise, hard negative): the negative is the Kiwi-BM25 hit at rank `skip` among the other
    premises for the query (the very top hits are left out: near-duplicates of the positive are likely
    there). Cached in the bench folder; mining takes a minute."""
    from munjang.search.index.bm25 import BM25Index

    path = cache_root() / "bench" / f"klue-nli-bm25-negatives-skip{skip}.json"
    if path.exists():
        return [tuple(row) for row in json.loads(path.read_text())]  # type: ignore[misc]
    premises = sorted({p for _, p in pairs})
    index = BM25Index("kiwi")
    index.index(premises)
    hits = index.search([q for q, _ in pairs], k=skip + 2)
    out = []
    for (query, positive), found in zip(pairs, hits, strict=True):
        others = [premises[h.row] for h in found if premises[h.row] != positive]
        if len(others) > skip:
            out.append((query, positive, others[skip]))
    path.write_text(json.dumps(out, ensure_ascii=False))
    return out


def pca_projection(model: Any, texts: list[str]) -> None:
    """Start the projection at the top principal directions of the backbone's token vectors (centred: the
    direction every token shares tells tokens apart least), so training begins from a projection that
    keeps most of what distinguishes them."""
    rows = []
    with torch.inference_mode():
        for start in range(0, len(texts), 64):
            batch = model.tokenize(texts[start : start + 64], "document")
            inputs = {k: v for k, v in batch.items() if k != "score_mask"}
            tokens = model.transformer(inputs)["token_embeddings"]
            rows.append(tokens[batch["attention_mask"].bool()])
    states = torch.cat(rows)
    _, _, vt = torch.linalg.svd(states - states.mean(dim=0), full_matrices=False)
    model.projection.linear.weight.data.copy_(vt[: model.projection.out_features])


def train(args: argparse.Namespace) -> int:
    from munjang.encoders.multi_vector import MultiVectorEncoder
    from munjang.encoders.multi_vector.fit import FitOptions, fit_colbert
    from munjang.models.hub import resolve_model_path
    from munjang.modules import Transformer

    torch.set_num_threads(args.threads)
    env = print_environment()
    pairs: list[Any] = klue_pairs()
    if args.hard_negatives is not None:
        pairs = with_hard_negatives(pairs, args.hard_negatives)
    base = Transformer.load(resolve_model_path(MODEL))
    model = MultiVectorEncoder.from_transformer(
        base,
        dim=128,
        query_length=32,
        document_length=args.train_doc_length,
        prompts={"query": "query: ", "document": "passage: "},
    )
    pca_projection(model, [row[1] for row in pairs[:: max(1, len(pairs) // 1000)]])
    # Train the top layers only: the word embeddings (most of e5-small's weights) and the lower layers
    # stay as they are, which makes a step several times cheaper on a shared CPU.
    auto = base.auto_model
    auto.embeddings.requires_grad_(False)
    for layer in auto.encoder.layer[: args.freeze_layers]:
        layer.requires_grad_(False)
    opts = FitOptions(
        batch_size=args.batch_size, steps=args.steps, lr=args.lr, max_seconds=args.max_minutes * 60
    )
    started = time.perf_counter()

    def log(step: int, loss: float) -> None:
        if step % 10 == 0 or step == 1:
            print(f"step {step:4d}  loss {loss:.4f}  {time.perf_counter() - started:7.1f} s", flush=True)

    losses = fit_colbert(model, pairs, opts, log)
    seconds = time.perf_counter() - started
    model.settings.document_length = None  # evaluation chooses the document length
    model.save(model_dir())
    record = {
        "pairs": len(pairs),
        "hard_negatives": None if args.hard_negatives is None else f"Kiwi BM25, rank {args.hard_negatives}",
        "steps": len(losses),
        "batch_size": args.batch_size,
        "lr": args.lr,
        "train_doc_length": args.train_doc_length,
        "frozen": f"embeddings + layers 0-{args.freeze_layers - 1}",
        "seconds": round(seconds, 1),
        "loss_first_10": round(float(np.mean(losses[:10])), 4),
        "loss_last_10": round(float(np.mean(losses[-10:])), 4),
        "environment": env,
    }
    (model_dir() / "training.json").write_text(json.dumps(record, indent=2, ensure_ascii=False))
    print(json.dumps({k: v for k, v in record.items() if k != "environment"}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=("train", "eval"))
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--max-minutes", type=float, default=60.0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--train-doc-length", type=int, default=96)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--hard-negatives", type=int, default=1, help="a BM25-mined negative premise: the hit at this rank"
    )
    parser.add_argument("--no-hard-negatives", dest="hard_negatives", action="store_const", const=None)
    parser.add_argument("--freeze-layers", type=int, default=4, help="lower encoder layers kept frozen")
    parser.add_argument("--queries", type=int, default=150, help="queries sampled per set (seeded)")
    parser.add_argument(
        "--corpus", type=int, default=800, help="documents per set: the relevant ones + seeded distractors"
    )
    parser.add_argument("--doc-length", type=int, default=512, help="document tokens at evaluation")
    parser.add_argument("--sets", default=",".join(SETS))
    args = parser.parse_args(argv)
    if args.what == "train":
        return train(args)
    return evaluate(args)


def dense_candidates(name: str, limit: int) -> dict[str, Any]:
    """e5-small dense top 100 per query from bench/korean_retrieval.py's cache (building it when missing),
    for its seeded query sample; at most `limit` queries (a seeded subsample) are kept."""
    import random

    import korean_retrieval as kr

    sample = kr.DEFAULT_QUERIES.get(name)
    cand, _ = kr.candidates(name, MODEL, sample, 0, kr_cache_dir(), {}, rebuild=False)
    rows = list(range(len(cand["qids"])))
    if len(rows) > limit:
        rows = sorted(random.Random(0).sample(rows, limit))
    qids = [cand["qids"][i] for i in rows]
    return {
        "qids": qids,
        "queries": [cand["query_texts"][q] for q in qids],
        "qrels": {q: set(cand["qrels"][q]) for q in qids},
        "dense": {cand["qids"][i]: [d for d, _ in cand["dense"][i]] for i in rows},
        "corpus": cand["corpus"],
    }


def dense_exact(name: str, ids: list[str], texts: list[str], cand: dict[str, Any]) -> dict[str, list[str]]:
    """e5-small dense top 100 over the sub-corpus itself (cosine, its query / passage prompts)."""
    import munjang
    from munjang.search.index.exact import top_k_exact

    path = model_dir() / f"dense-{name}-{len(ids)}-{len(cand['qids'])}.npz"
    if path.exists():
        saved = np.load(path)
        docs, queries = saved["docs"], saved["queries"]
    else:
        encoder = munjang.load_encoder(MODEL, device="cpu")
        docs = encoder.encode(texts, prompt_name="passage", batch_size=32)
        queries = encoder.encode(cand["queries"], prompt_name="query", batch_size=32)
        np.savez(path, docs=docs, queries=queries)
    rows, _ = top_k_exact(queries, docs, 100)
    return {q: [ids[r] for r in rows[i]] for i, q in enumerate(cand["qids"])}


def subcorpus(ids: list[str], qrels: dict[str, set[str]], size: int) -> list[str]:
    """Every document relevant to a kept query, plus seeded random others up to `size` (corpus order)."""
    import random

    relevant = {d for docs in qrels.values() for d in docs}
    others = [d for d in ids if d not in relevant]
    extra = max(0, size - len(relevant))
    keep = relevant | set(random.Random(0).sample(others, min(extra, len(others))))
    return [d for d in ids if d in keep]


def kr_cache_dir() -> Path:
    import tempfile

    return Path(tempfile.gettempdir()) / "munjang-bench-cache" / "korean_retrieval"


def encoded_corpus(model: Any, name: str, ids: list[str], texts: list[str], doc_length: int) -> Any:
    """The ColBERT token sets of a corpus, cached beside the model (FlatTokens, float16)."""
    from munjang.encoders.multi_vector.flat import FlatTokens

    stamp = (model_dir() / "model.safetensors").stat().st_mtime_ns  # a retrained model encodes anew
    path = model_dir() / f"corpus-{name}-{len(ids)}-len{doc_length}-{stamp}.npz"
    if path.exists():
        saved = np.load(path)
        if list(saved["ids"]) == ids:
            return FlatTokens(saved["vectors"], saved["offsets"])
    start = time.perf_counter()
    order = np.argsort([len(t) for t in texts])  # similar lengths batch together
    out: list[Any] = [None] * len(texts)
    for i in range(0, len(texts), 256):
        rows = order[i : i + 256]
        for r, m in zip(rows, model.encode_document([texts[j] for j in rows], batch_size=32), strict=True):
            out[r] = m
        print(f"\r  {name}: encoded {min(i + 256, len(texts))}/{len(texts)} documents", end="", flush=True)
    print(f" ({time.perf_counter() - start:.0f} s)")
    store = FlatTokens.from_sets(out)
    np.savez(path, vectors=store.vectors, offsets=store.offsets, ids=np.array(ids))
    return store


def evaluate(args: argparse.Namespace) -> int:
    import korean_retrieval as kr
    from munjang.encoders.multi_vector import load_multi_vector_encoder
    from munjang.encoders.multi_vector.flat import brute_force_top_k
    from munjang.evaluation.retrieval import evaluate_rankings_per_query
    from munjang.search.index.plaid import PlaidIndex

    torch.set_num_threads(args.threads)
    env = print_environment()
    model = load_multi_vector_encoder(model_dir(), device="cpu")
    model.settings.document_length = args.doc_length
    training = json.loads((model_dir() / "training.json").read_text())
    results: dict[str, Any] = {}
    for name in args.sets.split(","):
        print(f"== {name}", flush=True)
        cand = dense_candidates(name, args.queries)
        data = kr.LOADERS[name]()
        ids = subcorpus(list(data.corpus), cand["qrels"], CORPUS_CAP.get(name, args.corpus))
        kept = set(ids)
        # Dense over the sub-corpus is its ranking over the whole corpus with the other documents left out.
        cand["dense"] = {q: [d for d in ranked if d in kept] for q, ranked in cand["dense"].items()}
        short = sum(1 for ranked in cand["dense"].values() if len(ranked) < 10)
        if short:  # the cached top 100 does not reach 10 sub-corpus documents for some queries: search anew
            cand["dense"] = dense_exact(name, ids, [data.corpus[d] for d in ids], cand)
        store = encoded_corpus(model, name, ids, [data.corpus[d] for d in ids], args.doc_length)
        start = time.perf_counter()
        queries = model.encode_query(cand["queries"], batch_size=64)
        rows, _ = brute_force_top_k(queries, store, 100)
        brute_ms = 1000 * (time.perf_counter() - start) / len(queries)
        colbert = {q: [ids[r] for r in rows[i]] for i, q in enumerate(cand["qids"])}
        scores = {}
        for method, rankings in (("e5-small dense", cand["dense"]), ("colbert", colbert)):
            per_query = evaluate_rankings_per_query(rankings, cand["qrels"], k_values=(5, 10))
            scores[method] = {
                "ndcg@10": round(float(np.mean([m["ndcg@10"] for m in per_query.values()])), 4),
                "recall@5": round(float(np.mean([m["recall@5"] for m in per_query.values()])), 4),
            }
        start = time.perf_counter()
        index = PlaidIndex().build(store)
        build = time.perf_counter() - start
        start = time.perf_counter()
        found = [index.search_one(q, 10)[0] for q in queries]
        index_ms = 1000 * (time.perf_counter() - start) / len(queries)
        index_recall = float(
            np.mean([len(set(f) & set(t[:10])) / 10 for f, t in zip(found, rows, strict=True)])
        )
        results[name] = {
            "corpus": len(ids),
            "corpus_full": cand["corpus"],
            "queries": len(queries),
            "dense": "searched anew over the sub-corpus" if short else "cached top 100, filtered",
            "dense_cached_lists_under_10": short,
            **scores,
            "colbert_brute_force_ms_per_query": round(brute_ms, 1),
            "plaid_index": {
                "recall@10_vs_brute_force": round(index_recall, 4),
                "ms_per_query": round(index_ms, 2),
                "bytes_per_doc": round(index.memory_bytes() / len(store), 1),
                "build_s": round(build, 1),
                "centroids": len(index.centroids),
            },
        }
        print(json.dumps(results[name], indent=2), flush=True)
    sets = list(results)
    for method in ("e5-small dense", "colbert"):
        for metric in ("ndcg@10", "recall@5"):
            results.setdefault("mean", {}).setdefault(method, {})[metric] = round(
                float(np.mean([results[s][method][metric] for s in sets])), 4
            )
    payload = {
        "model": "ColBERT from multilingual-e5-small (128-d, trained on KLUE-NLI entailment pairs"
        + (", BM25-mined hard negatives)" if training.get("hard_negatives") else ")"),
        "training": {k: v for k, v in training.items() if k != "environment"},
        "document_length": args.doc_length,
        "results": results,
    }
    print(json.dumps(results.get("mean"), indent=2))
    print(write_result("korean_colbert", payload, env))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
