"""A ColBERT as a third score source for bench/korean_retrieval.py (its --multi-vector-model): the
ColBERT's top 100 per query on each set, and fusions of dense, BM25 and ColBERT compared per set with
each single retriever, with the same worst-case-loss and leave-one-set-out summary as the two-way part.

ColBERT candidates are computed offline, as a collection computes them: the model's document side over
the corpus (documents whole, as the dense and BM25 candidates), stored as float16 in the collection's
token index (`munjang.search.index.token_index.TokenIndex`, exact MaxSim at these sizes), queries through the
model's query side. They are cached beside the dense and BM25 candidates, keyed by the model's folder
and its weights' size and modification time.

The fusions (`munjang.search.index.fusion.fuse`, the function Collection.search calls) cover the simplex of
(dense, BM25, ColBERT) weights in steps of 0.25 with at least two retrievers, and equal thirds, for
weighted z-score, weighted min-max and RRF (k = 60). A setting with a zero weight fuses only the lists
it weighs. "zscore 1/3 each" is what Collection.search(mode="hybrid") does for a collection holding the
three retrievers; on --check-set a collection with dense, BM25 and ColBERT is built and it is asserted
that its hybrid search ranks as the offline fusion of its own three lists.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import time
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from korean_retrieval import (
    DEPTH,
    LOADERS,
    METRICS,
    _batched_search,
    _open_encoder,
    _slug,
    bootstrap_ci,
    per_query,
    select,
)
from munjang.search.index.fusion import fuse

SOURCES = ("dense", "bm25", "colbert")  # the order of a setting's weights (Collection: dense, lexical, mv)
CACHE_VERSION = 1
STEP = 0.25
DEFAULT3 = "zscore 1/3 each"  # Collection.search(mode="hybrid") with three retrievers and no options
BM25_COLBERT = "zscore b.5 c.5"  # Collection.search(mode="hybrid", weights=(0, 0.5, 0.5))
DEFAULT2 = "zscore d.5 b.5"  # the two-way default (HYBRID_WEIGHTS, z-score)
PARAMETER_FREE3 = ("rrf 1/3 each", "minmax 1/3 each", DEFAULT3)
SHOWN = (DEFAULT3, BM25_COLBERT, "zscore d.5 c.5", DEFAULT2, "minmax 1/3 each", "rrf 1/3 each")


@dataclass(frozen=True)
class Fusion3:
    """A fusion of up to three lists: weights in SOURCES order; lists with weight 0 are left out."""

    name: str
    method: str  # "rrf" or "weighted"
    weights: tuple[float, float, float]
    normalization: str = "zscore"
    rrf_k: float = 60.0

    def rank(self, lists: dict[str, list[Any]]) -> list[str]:
        used = [i for i, w in enumerate(self.weights) if w > 0]
        fused = fuse(
            [[(d, s) for d, s in lists[SOURCES[i]]] for i in used],
            method=self.method,
            weights=[self.weights[i] for i in used],
            rrf_k=self.rrf_k,
            normalization=self.normalization,
            top_k=DEPTH,
        )
        return [str(h.key) for h in fused]


def grid3() -> dict[str, Fusion3]:
    """The three-way settings (see the module docstring)."""
    steps = round(1 / STEP)
    weights = [
        (a / steps, b / steps, (steps - a - b) / steps)
        for a, b in product(range(steps + 1), repeat=2)
        if a + b <= steps
    ]
    weights = [w for w in weights if sum(x > 0 for x in w) >= 2]
    out: dict[str, Fusion3] = {}
    for label, method, norm in (
        ("zscore", "weighted", "zscore"),
        ("minmax", "weighted", "minmax"),
        ("rrf", "rrf", "minmax"),
    ):
        for w in weights:
            tag = " ".join(
                f"{s[0]}{x:g}".replace("0.", ".") for s, x in zip(SOURCES, w, strict=True) if x > 0
            )
            out[f"{label} {tag}"] = Fusion3(f"{label} {tag}", method, w, norm)
        third = (1 / 3, 1 / 3, 1 / 3)
        out[f"{label} 1/3 each"] = Fusion3(f"{label} 1/3 each", method, third, norm)
    return out


# -- ColBERT candidates ----------------------------------------------------------------------------------
def model_stamp(model: str) -> str:
    path = Path(model).expanduser().resolve()
    weights = path / "model.safetensors"
    stat = weights.stat() if weights.exists() else None
    raw = json.dumps([str(path), stat.st_size if stat else None, stat.st_mtime_ns if stat else None])
    return f"{_slug(path.name)}-{hashlib.sha256(raw.encode()).hexdigest()[:10]}"


def _load_model(state: dict[str, Any], model: str) -> Any:
    if "multi_vector" not in state:
        from munjang.encoders.multi_vector import load_multi_vector_encoder

        print(f"loading {model} ...", flush=True)
        state["multi_vector"] = load_multi_vector_encoder(str(Path(model).expanduser()), device="cpu")
    return state["multi_vector"]


def colbert_candidates(
    name: str, cand: dict, model: str, cache: Path, state: dict[str, Any], rebuild: bool, key: str
) -> dict:
    """{"colbert": top DEPTH (id, score) per query of cand["qids"], "seconds": ...}, cached."""
    from munjang.search.index.token_index import TokenIndex

    path = cache / f"{key}-colbert-{model_stamp(model)}-v{CACHE_VERSION}.json.gz"
    if path.exists() and not rebuild:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            print(f"  ColBERT candidates from cache {path}")
            out = json.load(f)
        if out["qids"] == cand["qids"]:
            return out
    encoder = _load_model(state, model)
    corpus = LOADERS[name]().corpus
    if len(corpus) != cand["corpus"]:
        raise ValueError(f"{name}: corpus of {len(corpus)} documents, the candidates saw {cand['corpus']}")
    ids, texts = list(corpus), list(corpus.values())
    print(f"  ColBERT: encoding {len(ids)} documents ...", flush=True)
    start = time.perf_counter()
    index = TokenIndex(encoder.get_embedding_dimension())
    for i in range(0, len(texts), 256):
        matrices = encoder.encode_document(texts[i : i + 256], batch_size=32)
        index.add(np.arange(i, i + len(matrices)), [np.asarray(m, np.float32) for m in matrices])
        print(f"\r  ColBERT documents: {min(i + 256, len(texts))}/{len(texts)}", end="", flush=True)
    print()
    index_seconds = time.perf_counter() - start
    start = time.perf_counter()
    queries = [cand["query_texts"][q] for q in cand["qids"]]
    hits: list[list[tuple[int, float]]] = []
    for i in range(0, len(queries), 256):
        vectors = [
            np.asarray(v, np.float32) for v in encoder.encode_query(queries[i : i + 256], batch_size=32)
        ]
        hits.extend(index.search(vectors, DEPTH))
    out = {
        "version": CACHE_VERSION,
        "set": name,
        "model": str(Path(model).expanduser().resolve()),
        "qids": cand["qids"],
        "colbert": [[[ids[label], score] for label, score in row] for row in hits],
        "tokens": int(index.offsets[-1]),
        "seconds": {"index": round(index_seconds, 1), "search": round(time.perf_counter() - start, 1)},
    }
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    tmp.replace(path)
    return out


# -- evaluation ------------------------------------------------------------------------------------------
def evaluate_set3(cand: dict, colbert: list, grid: dict[str, Fusion3]) -> dict[str, dict[str, list[float]]]:
    """Per-query metrics of each single retriever and each three-way setting on one set."""
    lists = [
        {"dense": d, "bm25": b, "colbert": c}
        for d, b, c in zip(cand["dense"], cand["bm25"], colbert, strict=True)
    ]
    out = {s: per_query(cand, [[d for d, _ in row[s]] for row in lists]) for s in SOURCES}
    for name, setting in grid.items():
        out[name] = per_query(cand, [setting.rank(row) for row in lists])
    return out


def check_collection3(
    name: str, cand: dict, key: str, model: str, dense_model: str, cache: Path, state: dict, grid: dict
) -> dict:
    """Build a collection with dense, BM25 and ColBERT over the set; assert that its default hybrid
    search ranks exactly as the offline DEFAULT3 fusion of its own three lists, and report how its
    ColBERT lists agree with the offline ColBERT candidates."""
    from munjang.search.collection.collection import Collection

    folder = cache / f"{key}-colbert-{model_stamp(model)}.collection"
    shutil.rmtree(folder, ignore_errors=True)
    corpus = LOADERS[name]().corpus
    encoder, mv = _open_encoder(state, dense_model), _load_model(state, model)
    texts = [cand["query_texts"][q] for q in cand["qids"]]
    with Collection.create(
        folder,
        dense_model,
        encoder=encoder,
        chunking={"enabled": False},
        multi_vector_model=str(Path(model).expanduser()),
        multi_vector_encoder=mv,
    ) as col:
        col.add(list(corpus), list(corpus.values()), batch_size=64, show_progress_bar=True)
        lists = {
            source: _batched_search(col, texts, source, mode=mode)
            for source, mode in (("dense", "dense"), ("bm25", "lexical"), ("colbert", "multi_vector"))
        }
        online = _batched_search(col, texts, "hybrid (three)", mode="hybrid")
    offline = [
        grid[DEFAULT3].rank({s: [(h.id, h.score) for h in lists[s][i]] for s in SOURCES})
        for i in range(len(texts))
    ]
    differ = sum([h.id for h in row] != ranked for row, ranked in zip(online, offline, strict=True))
    assert differ == 0, f"Collection.search(mode='hybrid') ranks {differ} of {len(texts)} queries differently"
    colbert_cached = colbert_candidates(name, cand, model, cache, state, False, key)["colbert"]
    same_top10 = sum(
        [h.id for h in row[:10]] == [d for d, _ in cached[:10]]
        for row, cached in zip(lists["colbert"], colbert_cached, strict=True)
    )
    print(f"  check: Collection.search(mode='hybrid') == offline '{DEFAULT3}' on {len(texts)} queries")
    print(f"  check: the collection's ColBERT top 10 is the offline one on {same_top10}/{len(texts)} queries")
    shutil.rmtree(folder, ignore_errors=True)
    return {
        "set": name,
        "queries": len(texts),
        "hybrid_equals_offline_fusion": True,
        "colbert_top10_identical_to_offline": same_top10,
    }


def summarize(table3: dict, scores3: dict, sets: list[str], korean: list[str], grid: dict) -> dict:
    """Worst-case loss against the best of the three singles (and against max(BM25, dense)),
    leave-one-set-out, and paired bootstrap intervals of the shown settings."""
    fusions = list(grid)
    procs = {
        "tune grid by mean nDCG@10": (fusions, "mean"),
        "tune grid by worst-case loss": (fusions, "worst"),
        "parameter-free, pick by mean nDCG@10": (list(PARAMETER_FREE3), "mean"),
        **{f"fixed {f}": ([f], "mean") for f in (DEFAULT3, BM25_COLBERT, DEFAULT2)},
    }
    selection = select(table3, korean, fusions, singles=SOURCES, procs=procs) if korean else {}
    vs_two = {
        f: {
            s: round(
                table3[s][f]["ndcg@10"] - max(table3[s]["bm25"]["ndcg@10"], table3[s]["dense"]["ndcg@10"]), 4
            )
            for s in sets
        }
        for f in SHOWN
    }
    boot: dict[str, dict[str, Any]] = {}
    for f in SHOWN:
        boot[f] = {}
        for s in sets:
            single = max(SOURCES, key=lambda m: table3[s][m]["ndcg@10"])
            diff = np.array(scores3[s][f]["ndcg@10"]) - np.array(scores3[s][single]["ndcg@10"])
            boot[f][s] = {"vs": single, "diff": round(float(diff.mean()), 4), "ci95": bootstrap_ci(diff)}
    return {**selection, "loss_vs_max_bm25_dense": vs_two, "paired_bootstrap_vs_best_single": boot}


def print_three(table3: dict, summary: dict, sets: list[str], korean: list[str]) -> None:
    rows = list(
        dict.fromkeys(
            [
                *SOURCES,
                *SHOWN,
                *(x for x in (summary.get("recommended"), summary.get("best_worst_case")) if x),
            ]
        )
    )
    width = max(len(r) for r in rows) + 2
    for metric in ("ndcg@10", "recall@1", "recall@5"):
        print(f"\n{metric} (with ColBERT)".ljust(width + 1) + "".join(f"{s:>15}" for s in sets))
        for r in rows:
            print(f"{r:<{width}}" + "".join(f"{table3[s][r][metric]:>15.4f}" for s in sets))
    if not summary.get("worst_case_loss"):
        return
    worst, mean = summary["worst_case_loss"], summary["mean_ndcg@10"]
    print(f"\nworst-case nDCG@10 loss vs max(BM25, dense, ColBERT) over {', '.join(korean)}; mean; best 10:")
    for f in sorted(worst, key=lambda f: (-worst[f], -mean[f]))[:10]:
        print(f"  {f:<26}{worst[f]:+.4f}  mean {mean[f]:.4f}")
    for f in SHOWN:
        cells = "  ".join(f"{s} {v:+.4f}" for s, v in summary["loss_vs_best_single"][f].items())
        print(f"  {f:<26}{worst[f]:+.4f}  mean {mean[f]:.4f}   {cells}")
    print("\nleave-one-set-out (three retrievers): held-out nDCG@10 (minus the best single of three)")
    for proc, v in summary["leave_one_set_out"].items():
        folds = "  ".join(
            f"{h} {fold['pick']} {fold['ndcg@10']:.4f} ({fold['vs_best_single']:+.4f})"
            for h, fold in v["folds"].items()
        )
        print(
            f"  {proc}: held-out mean {v['held_out_mean_ndcg@10']:.4f}, worst {v['held_out_worst_loss']:+.4f}"
        )
        print(f"    {folds}")
    print("\nnDCG@10 minus the best single of three, paired bootstrap 95% CI:")
    for f, row in summary["paired_bootstrap_vs_best_single"].items():
        cells = "  ".join(
            f"{s} {v['diff']:+.3f} [{v['ci95'][0]:+.3f},{v['ci95'][1]:+.3f}]" for s, v in row.items()
        )
        print(f"  {f:<20}{cells}")
    print(
        f"\nrecommended (three retrievers): {summary['recommended']}, "
        f"from '{summary['best_procedure_held_out']}'"
    )


def table_of(scores3: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    return {m: {k: round(float(np.mean(v[k])), 4) for k in METRICS} for m, v in scores3.items()}
