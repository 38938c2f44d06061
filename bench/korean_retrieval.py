"""Which hybrid-search default generalizes across Korean retrieval sets: BM25, dense (e5-small) and a grid
of fusions (RRF, weighted min-max / z-score) on five Korean sets (+ STSb English as a check), chosen
without tuning on the set it is judged on (leave-one-set-out), and compared per set with the better of
BM25 and dense.

Sets: bench/retrieval_sets.py (AutoRAG-ko, ChatbotData, ParaKQC, Korean question pairs, KorSTS; STSb
(English) is reported but kept out of the selection).

Each set goes into a munjang Collection (multilingual-e5-small with its default prompts, "query: " and
"passage: ", which is what users get); every query's dense top 100 and BM25 top 100 are retrieved once
and cached (keyed by set, model, query sample). The fusions are then evaluated offline with
munjang.search.index.fusion.fuse, the function Collection.search calls; the script asserts on --check-set
that col.search(mode="hybrid", ...) returns the same rankings (queries in the same 256-query chunks: the
encoder pads per batch, which moves dense scores in their last digits and can swap near-ties).

Selection (Korean sets only): the worst-case nDCG@10 loss of each setting against max(BM25, dense), and
leave-one-set-out: each way of choosing the default (tune the grid by mean nDCG@10, tune it by worst-case
loss, choose among the parameter-free settings, or fix one setting) picks on four sets and is scored on
the fifth. The recommended default comes from the way with the smallest held-out worst-case loss.

    python bench/korean_retrieval.py              # all sets: ~25 min the first time on 2 busy cores
    python bench/korean_retrieval.py --sets autorag,korsts --queries 300
    python bench/korean_retrieval.py --check-set none      # from the cache, without the Collection check
    python bench/korean_retrieval.py --multi-vector-model ~/.cache/munjang/bench/korean-colbert-e5-small \
        --name korean_retrieval_colbert   # + a ColBERT as a third score source (bench/three_retrievers.py)

The cache lives in $TMPDIR/munjang-bench-cache/korean_retrieval (--cache-dir): per set the candidate
lists (JSON) and the collection the check reopens.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result
from munjang.evaluation.retrieval import evaluate_rankings_per_query
from munjang.search.index.fusion import fuse
from retrieval_sets import DEFAULT_QUERIES, KOREAN, LOADERS, SETS, RetrievalSet

CACHE_VERSION = 1
DEPTH = 100  # candidates per retriever, as Collection.search(candidates=100)
K_VALUES = (1, 3, 5, 10, 100)
METRICS = ("ndcg@10", "recall@1", "recall@5", "recall@10", "mrr@10", "recall@100")
DENSE_WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
PREVIOUS_DEFAULT = "weighted minmax w=0.8"  # the default before this comparison (chosen on KorSTS dev)
DEFAULT = "weighted zscore w=0.5"  # HYBRID_FUSION / HYBRID_WEIGHTS / HYBRID_NORMALIZATION now
PARAMETER_FREE = ("rrf k=60 w=0.5", "weighted minmax w=0.5", "weighted zscore w=0.5")
CHECKED = (PREVIOUS_DEFAULT, "rrf k=60 w=0.5", "rrf k=10 w=0.7", "weighted zscore w=0.5")


# -- settings ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Setting:
    name: str
    fusion: str  # "rrf" or "weighted"
    dense_weight: float
    rrf_k: float = 60.0
    normalization: str = "minmax"

    def options(self) -> dict[str, Any]:
        """The keyword arguments of Collection.search (and of fuse) for this setting."""
        return {
            "fusion": self.fusion,
            "weights": [self.dense_weight, round(1 - self.dense_weight, 10)],
            "rrf_k": self.rrf_k,
            "normalization": self.normalization,
        }


def settings() -> dict[str, Setting]:
    out: dict[str, Setting] = {}
    for k in (10, 60):
        for w in DENSE_WEIGHTS:
            out[f"rrf k={k} w={w}"] = Setting(f"rrf k={k} w={w}", "rrf", w, rrf_k=k)
    for norm in ("minmax", "zscore"):
        for w in DENSE_WEIGHTS:
            out[f"weighted {norm} w={w}"] = Setting(
                f"weighted {norm} w={w}", "weighted", w, normalization=norm
            )
    return out


# -- candidates (the expensive part, cached) ---------------------------------------------------------------
def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in text)


def _open_encoder(state: dict[str, Any], model: str) -> Any:
    if "encoder" not in state:
        import munjang

        print(f"loading {model} ...", flush=True)
        state["encoder"] = munjang.load_encoder(model, device="cpu")
    return state["encoder"]


def _batched_search(col: Any, texts: list[str], label: str, **options: Any) -> list[Any]:
    out: list[Any] = []
    start = time.perf_counter()
    for i in range(0, len(texts), 256):
        out.extend(col.search(texts[i : i + 256], k=DEPTH, candidates=DEPTH, **options))
        print(f"\r  {label}: {len(out)}/{len(texts)} queries, {time.perf_counter() - start:.0f}s", end="")
        sys.stdout.flush()
    print()
    return out


def build_candidates(name: str, data: RetrievalSet, model: str, folder: Path, state: dict[str, Any]) -> dict:
    """Index the corpus in a Collection under `folder`, retrieve dense and BM25 top 100 for each query."""
    from munjang.search.collection.collection import Collection

    encoder = _open_encoder(state, model)
    shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    ids, texts = list(data.corpus), list(data.corpus.values())
    print(f"  indexing {len(ids)} documents ...", flush=True)
    start = time.perf_counter()
    # Documents whole (no passages): the fusion is compared on one list per retriever of documents;
    # how passages change AutoRAG is bench/autorag.py's question.
    with Collection.create(folder, model, encoder=encoder, chunking={"enabled": False}) as col:
        batch = 16 if name == "autorag" else 64
        col.add(ids, texts, batch_size=batch, show_progress_bar=True)
        index_seconds = time.perf_counter() - start
        qids = list(data.qrels)
        qtexts = [data.queries[q] for q in qids]
        start = time.perf_counter()
        dense = _batched_search(col, qtexts, "dense", mode="dense")
        dense_seconds = time.perf_counter() - start
        start = time.perf_counter()
        lexical = _batched_search(col, qtexts, "bm25", mode="lexical")
        lexical_seconds = time.perf_counter() - start
        prompts = {"query": col.config["query_prompt_name"], "document": col.config["document_prompt_name"]}
        lexical_config = col.config["lexical"]
    return {
        "version": CACHE_VERSION,
        "set": name,
        "model": model,
        "prompts": prompts,
        "lexical": lexical_config,
        "notes": data.notes,
        "corpus": len(ids),
        "qids": qids,
        "query_texts": {q: data.queries[q] for q in qids},
        "qrels": {q: sorted(data.qrels[q]) for q in qids},
        "dense": [[[h.id, h.score] for h in hits] for hits in dense],
        "bm25": [[[h.id, h.score] for h in hits] for hits in lexical],
        "seconds": {
            "index": round(index_seconds, 1),
            "dense_search": round(dense_seconds, 1),
            "bm25_search": round(lexical_seconds, 1),
        },
    }


def cache_key(name: str, model: str, n_queries: int | None, seed: int) -> str:
    return f"{name}-{_slug(model)}-q{n_queries or 'all'}-s{seed}-v{CACHE_VERSION}"


def candidates(
    name: str, model: str, n_queries: int | None, seed: int, cache: Path, state: dict[str, Any], rebuild: bool
) -> tuple[dict, Path]:
    key = cache_key(name, model, n_queries, seed)
    path, folder = cache / f"{key}.json.gz", cache / f"{key}.collection"
    if path.exists() and folder.exists() and not rebuild:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            print(f"  candidates from cache {path}")
            return json.load(f), folder
    data = LOADERS[name]().sample(n_queries, seed)
    print(f"  {len(data.corpus)} documents, {len(data.qrels)} queries", flush=True)
    cand = build_candidates(name, data, model, folder, state)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        json.dump(cand, f, ensure_ascii=False)
    tmp.replace(path)
    return cand, folder


# -- offline fusion and metrics ----------------------------------------------------------------------------
def fused_rankings(cand: dict, setting: Setting) -> list[list[str]]:
    opts = setting.options()
    out = []
    for dense, bm25 in zip(cand["dense"], cand["bm25"], strict=True):
        fused = fuse(
            [[(d, s) for d, s in dense], [(d, s) for d, s in bm25]],
            method=opts["fusion"],
            weights=opts["weights"],
            rrf_k=opts["rrf_k"],
            normalization=opts["normalization"],
            top_k=DEPTH,
        )
        out.append([str(h.key) for h in fused])
    return out


def per_query(cand: dict, rankings: list[list[str]]) -> dict[str, list[float]]:
    """Per-query metrics, in the order of cand["qids"]."""
    ranked = dict(zip(cand["qids"], rankings, strict=True))
    scores = evaluate_rankings_per_query(ranked, cand["qrels"], k_values=K_VALUES)
    names = next(iter(scores.values())).keys()
    return {m: [scores[q][m] for q in cand["qids"]] for m in names}


def evaluate_set(cand: dict, grid: dict[str, Setting]) -> dict[str, dict[str, list[float]]]:
    out = {
        "bm25": per_query(cand, [[d for d, _ in hits] for hits in cand["bm25"]]),
        "dense": per_query(cand, [[d for d, _ in hits] for hits in cand["dense"]]),
    }
    for name, setting in grid.items():
        out[name] = per_query(cand, fused_rankings(cand, setting))
    return out


def autorag_recall(cand: dict, rankings: list[list[str]], k: int) -> float:
    """AutoRAG's Recall@k: the fraction of questions whose ground-truth page is among the top k."""
    hits = [bool(set(r[:k]) & set(cand["qrels"][q])) for q, r in zip(cand["qids"], rankings, strict=True)]
    return float(np.mean(hits))


def check_collection(cand: dict, folder: Path, model: str, grid: dict[str, Setting], state: dict) -> dict:
    """Assert that Collection.search(mode="hybrid", ...) ranks exactly as the offline fusion."""
    from munjang.search.collection.collection import Collection

    encoder = _open_encoder(state, model)
    qids = cand["qids"]
    report = {}
    # Not read-only: a cached collection written by an older munjang is upgraded in place.
    with Collection.open(folder, encoder=encoder) as col:
        texts = [cand["query_texts"][q] for q in qids]
        for name in CHECKED:
            setting = grid[name]
            # Same 256-query chunks as the candidates: the encoder pads per batch, and another padding
            # moves dense scores in the last float digits, enough to swap near-ties.
            hits = _batched_search(col, texts, f"hybrid {name}", mode="hybrid", **setting.options())
            online = [[h.id for h in row] for row in hits]
            offline = fused_rankings(cand, setting)
            differ = sum(a != b for a, b in zip(online, offline, strict=True))
            assert differ == 0, f"{name}: Collection.search ranks {differ} of {len(qids)} queries differently"
            report[name] = {"queries": len(qids), "identical_rankings": True}
            print(f"  check {name}: Collection.search(mode='hybrid') == offline fuse on {len(qids)} queries")
    return report


# -- selection -------------------------------------------------------------------------------------------
def bootstrap_ci(diff: np.ndarray, seed: int = 0, n: int = 2000) -> list[float]:
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(n, len(diff)))].mean(axis=1)
    return [round(float(np.quantile(means, 0.025)), 4), round(float(np.quantile(means, 0.975)), 4)]


def _pick(candidates: list[str], sets: list[str], nd: dict, loss: dict, criterion: str) -> str:
    """The setting with the best mean nDCG@10 (criterion "mean") or the smallest worst-case loss against
    the better single retriever ("worst") on `sets`; ties go to the higher mean, then the name."""

    def mean(f: str) -> float:
        return float(np.mean([nd[s][f] for s in sets]))

    if criterion == "mean":
        return max(candidates, key=lambda f: (round(mean(f), 10), f))
    return max(candidates, key=lambda f: (min(loss[f][s] for s in sets), round(mean(f), 10), f))


def procedures(fusions: list[str]) -> dict[str, tuple[list[str], str]]:
    """Ways to choose the default: tune over the whole grid, choose among the parameter-free settings,
    or fix one setting (nothing tuned)."""
    out = {
        "tune grid by mean nDCG@10": (fusions, "mean"),
        "tune grid by worst-case loss": (fusions, "worst"),
        "parameter-free, pick by mean nDCG@10": (list(PARAMETER_FREE), "mean"),
    }
    for f in (*PARAMETER_FREE, PREVIOUS_DEFAULT):
        out[f"fixed {f}"] = ([f], "mean")
    return out


def select(
    table: dict[str, dict[str, dict[str, float]]],
    sets: list[str],
    fusions: list[str],
    singles: tuple[str, ...] = ("bm25", "dense"),
    procs: dict[str, tuple[list[str], str]] | None = None,
) -> dict:
    """Worst-case loss vs the better single retriever (of `singles`), mean nDCG@10, and
    leave-one-set-out: each way of choosing the default (`procs`, default `procedures`) picks on all
    sets but one and is scored on the one left out."""
    nd = {s: {m: table[s][m]["ndcg@10"] for m in table[s]} for s in sets}
    best_single = {s: max(nd[s][m] for m in singles) for s in sets}
    loss = {f: {s: round(nd[s][f] - best_single[s], 4) for s in sets} for f in fusions}
    worst = {f: min(loss[f].values()) for f in fusions}
    mean = {f: round(float(np.mean([nd[s][f] for s in sets])), 4) for f in fusions}
    loso: dict[str, Any] = {}
    for proc, (candidates, criterion) in (procs or procedures(fusions)).items():
        folds = {}
        for held in sets:
            others = [s for s in sets if s != held] or [held]
            pick = _pick(candidates, others, nd, loss, criterion)
            folds[held] = {"pick": pick, "ndcg@10": nd[held][pick], "vs_best_single": loss[pick][held]}
        loso[proc] = {
            "folds": folds,
            "held_out_mean_ndcg@10": round(float(np.mean([v["ndcg@10"] for v in folds.values()])), 4),
            "held_out_worst_loss": min(v["vs_best_single"] for v in folds.values()),
            "pick_on_all_sets": _pick(candidates, sets, nd, loss, criterion),
        }
    best_proc = max(loso, key=lambda p: (loso[p]["held_out_worst_loss"], loso[p]["held_out_mean_ndcg@10"]))
    never_below = [f for f in fusions if worst[f] >= 0]
    return {
        "best_single_ndcg@10": best_single,
        "loss_vs_best_single": loss,
        "worst_case_loss": worst,
        "mean_ndcg@10": mean,
        "leave_one_set_out": loso,
        "never_below_best_single": sorted(never_below, key=lambda f: -mean[f]),
        "best_mean": _pick(fusions, sets, nd, loss, "mean"),
        "best_worst_case": _pick(fusions, sets, nd, loss, "worst"),
        "best_procedure_held_out": best_proc,
        "recommended": loso[best_proc]["pick_on_all_sets"],
    }


# -- output --------------------------------------------------------------------------------------------
def print_table(table: dict, sets: list[str], rows: list[str], metric: str) -> None:
    width = max(len(r) for r in rows) + 2
    print(f"\n{metric}".ljust(width + 1) + "".join(f"{s:>15}" for s in sets))
    for r in rows:
        print(f"{r:<{width}}" + "".join(f"{table[s][r][metric]:>15.4f}" for s in sets))


def autorag_style(cand: dict, scores: dict, grid: dict[str, Setting]) -> dict[str, dict[str, float]]:
    """AutoRAG's Recall@k for BM25, dense and the previous default; asserted equal to recall@k when every
    question has one page."""
    one_page = all(len(r) == 1 for r in cand["qrels"].values())
    out: dict[str, dict[str, float]] = {}
    for method in ("bm25", "dense", PREVIOUS_DEFAULT):
        if method in grid:
            rankings = fused_rankings(cand, grid[method])
        else:
            rankings = [[d for d, _ in hits] for hits in cand[method]]
        out[method] = {}
        for k in (1, 3, 5, 10):
            theirs = autorag_recall(cand, rankings, k)
            ours = float(np.mean(scores[method][f"recall@{k}"]))
            if one_page:
                assert abs(ours - theirs) < 1e-9, f"{method}: AutoRAG recall@{k} {theirs} != {ours}"
            out[method][f"recall@{k}"] = round(theirs, 4)
    return out


def bootstrap_vs_single(table: dict, scores: dict, sets: list[str], methods: list[str]) -> dict:
    """Per set, nDCG@10 of each method minus that of the better single retriever: mean and paired
    bootstrap 95% interval over queries."""
    out: dict[str, dict[str, Any]] = {}
    for f in methods:
        out[f] = {}
        for s in sets:
            single = "bm25" if table[s]["bm25"]["ndcg@10"] >= table[s]["dense"]["ndcg@10"] else "dense"
            diff = np.array(scores[s][f]["ndcg@10"]) - np.array(scores[s][single]["ndcg@10"])
            out[f][s] = {"vs": single, "diff": round(float(diff.mean()), 4), "ci95": bootstrap_ci(diff)}
    return out


def print_selection(selection: dict, sets: list[str], fusions: list[str]) -> None:
    worst, mean = selection["worst_case_loss"], selection["mean_ndcg@10"]
    print(f"\nworst-case nDCG@10 loss vs max(BM25, dense) over {', '.join(sets)} (and mean nDCG@10):")
    for f in sorted(fusions, key=lambda f: (-worst[f], -mean[f])):
        print(f"  {f:<26}{worst[f]:+.4f}  mean {mean[f]:.4f}")
    print("\nleave-one-set-out: each way of choosing picks on the other Korean sets; held-out nDCG@10")
    print("(minus max(BM25, dense) in brackets), then the held-out mean and worst loss")
    for proc, v in selection["leave_one_set_out"].items():
        print(f"  {proc}")
        for held, fold in v["folds"].items():
            print(f"    {held:<14} {fold['pick']:<24} {fold['ndcg@10']:.4f} ({fold['vs_best_single']:+.4f})")
        print(
            f"    held-out mean {v['held_out_mean_ndcg@10']:.4f}, worst {v['held_out_worst_loss']:+.4f}; "
            f"on all sets it picks {v['pick_on_all_sets']}"
        )
    print("\nnDCG@10 minus the better single retriever, paired bootstrap 95% CI:")
    for f, row in selection["paired_bootstrap_vs_best_single"].items():
        cells = "  ".join(
            f"{s} {v['diff']:+.3f} [{v['ci95'][0]:+.3f},{v['ci95'][1]:+.3f}]" for s, v in row.items()
        )
        print(f"  {f:<26}{cells}")
    rec, minimax = selection["recommended"], selection["best_worst_case"]
    print(
        f"\nrecommended default: {rec}: worst-case loss {worst[rec]:+.4f}, mean nDCG@10 {mean[rec]:.4f}; "
        f"from '{selection['best_procedure_held_out']}', the way of choosing with the smallest held-out "
        "worst-case loss"
    )
    print(
        f"smallest worst-case loss on all sets (chosen with every set's labels): {minimax} "
        f"({worst[minimax]:+.4f})"
    )
    print(f"never below max(BM25, dense): {', '.join(selection['never_below_best_single']) or 'no setting'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of {', '.join(SETS)}")
    parser.add_argument(
        "--queries",
        type=int,
        default=None,
        help="at most N queries per set (seeded sample); default: 2000 chatbot / question-pair, "
        "500 parakqc, all for the others",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "munjang-bench-cache" / "korean_retrieval",
    )
    parser.add_argument("--rebuild", action="store_true", help="ignore cached candidates")
    parser.add_argument(
        "--check-set", default="korsts", help="set on which Collection.search is checked ('none': skip)"
    )
    parser.add_argument("--name", default="korean_retrieval")
    parser.add_argument(
        "--multi-vector-model",
        default=None,
        help="a ColBERT folder: its candidates as a third score source (bench/three_retrievers.py)",
    )
    args = parser.parse_args(argv)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    unknown = set(sets) - set(SETS)
    if unknown:
        parser.error(f"unknown sets {sorted(unknown)}; choose from {', '.join(SETS)}")

    env = print_environment()
    grid = settings()
    fusions = list(grid)
    state: dict[str, Any] = {}
    table: dict[str, dict[str, dict[str, float]]] = {}
    per_set: dict[str, Any] = {}
    scores: dict[str, dict[str, dict[str, list[float]]]] = {}
    check: dict[str, Any] = {}
    three: Any = None
    if args.multi_vector_model:
        import three_retrievers as three

        grid3 = three.grid3()
        scores3: dict[str, dict[str, dict[str, list[float]]]] = {}
        colbert_runs: dict[str, Any] = {}
        check3: dict[str, Any] = {}
    total = time.perf_counter()
    for name in sets:
        n = args.queries if args.queries is not None else DEFAULT_QUERIES.get(name)
        print(f"\n[{name}]", flush=True)
        cand, folder = candidates(name, args.model, n, args.seed, args.cache_dir, state, args.rebuild)
        start = time.perf_counter()
        scores[name] = evaluate_set(cand, grid)
        table[name] = {
            m: {k: round(float(np.mean(v[k])), 4) for k in METRICS} for m, v in scores[name].items()
        }
        per_set[name] = {
            "corpus": cand["corpus"],
            "queries": len(cand["qids"]),
            "relevant_per_query": round(float(np.mean([len(r) for r in cand["qrels"].values()])), 2),
            "notes": cand["notes"],
            "prompts": cand["prompts"],
            "seconds": cand["seconds"],
        }
        print(
            f"  {cand['corpus']} documents, {len(cand['qids'])} queries; fused {len(grid)} settings "
            f"in {time.perf_counter() - start:.1f}s"
        )
        if name == "autorag":
            per_set[name]["autorag_style_recall"] = autorag_style(cand, scores[name], grid)
        if name == args.check_set:
            check = {"set": name, **check_collection(cand, folder, args.model, grid, state)}
        if three is not None:
            key = cache_key(name, args.model, n, args.seed)
            mv = args.multi_vector_model
            colbert = three.colbert_candidates(name, cand, mv, args.cache_dir, state, args.rebuild, key)
            start = time.perf_counter()
            scores3[name] = three.evaluate_set3(cand, colbert["colbert"], grid3)
            print(f"  fused {len(grid3)} three-way settings in {time.perf_counter() - start:.1f}s")
            colbert_runs[name] = {"tokens": colbert["tokens"], "seconds": colbert["seconds"]}
            if name == args.check_set:
                check3 = three.check_collection3(
                    name, cand, key, mv, args.model, args.cache_dir, state, grid3
                )

    korean = [s for s in sets if s in KOREAN]
    selection = select(table, korean, fusions) if korean else {}
    shown = ["bm25", "dense", PREVIOUS_DEFAULT, *PARAMETER_FREE]
    if selection:
        extra = [selection["recommended"], selection["best_mean"], selection["best_worst_case"]]
        extra += [f["pick"] for v in selection["leave_one_set_out"].values() for f in v["folds"].values()]
        shown += [f for f in dict.fromkeys(extra) if f not in shown]
    for metric in ("ndcg@10", "recall@1"):
        print_table(table, sets, shown, metric)
    if selection:
        selection["paired_bootstrap_vs_best_single"] = bootstrap_vs_single(table, scores, sets, shown[2:])
        print_selection(selection, korean, fusions)

    payload = {
        "model": args.model,
        "prompts": "the model's defaults (e5: 'query: ' for queries, 'passage: ' for documents)",
        "depth": DEPTH,
        "seed": args.seed,
        "previous_default": PREVIOUS_DEFAULT,
        "default": DEFAULT,
        "parameter_free": list(PARAMETER_FREE),
        "sets": per_set,
        "selection_sets": korean,
        "collection_check": check,
        "table": table,
        "selection": selection,
        "seconds": round(time.perf_counter() - total, 1),
    }
    if three is not None:
        table3 = {s: three.table_of(scores3[s]) for s in sets}
        summary3 = three.summarize(table3, scores3, sets, korean, grid3)
        three.print_three(table3, summary3, sets, korean)
        payload["colbert"] = {
            "model": three.model_stamp(args.multi_vector_model),
            "weights_order": list(three.SOURCES),
            "default_three": three.DEFAULT3,
            "settings": len(grid3),
            "sets": colbert_runs,
            "collection_check": check3,
            "table": table3,
            "selection": summary3,
        }
        payload["seconds"] = round(time.perf_counter() - total, 1)
    path = write_result(args.name, payload, env)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
