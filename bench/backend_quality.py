"""Search quality per storage backend: the same Korean retrieval sets, the same vectors, every backend.

Each set of bench/korean_retrieval.py (AutoRAG-ko, ChatbotData, ParaKQC, Korean question pairs, KorSTS)
goes into one munjang Collection per backend (documents whole, multilingual-e5-small with its
prompts), and every query is answered in the default hybrid mode and by dense and BM25 alone. The
vectors are encoded once per set and reused for every backend (a caching wrapper around the encoder),
so what differs between backends is only what the backend does: its dense index, its BM25, its
filters and the fusion of what it returns. The folder backend is the reference: each other
backend's nDCG@10 / recall is reported beside it, with the difference.

    python bench/backend_quality.py                                  # folder + postgres (pgserver)
    python bench/backend_quality.py --backends folder,postgres,qdrant --sets autorag,korsts

The vector cache lives in $TMPDIR/munjang-bench-cache/backend_quality (--cache-dir).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result
from munjang.evaluation.retrieval import evaluate_rankings_per_query
from retrieval_sets import DEFAULT_QUERIES, KOREAN, LOADERS, RetrievalSet

MODES = ("hybrid", "dense", "lexical")
METRICS = ("ndcg@10", "recall@1", "recall@5", "recall@10")


class CachedEncoder:
    """An encoder whose `encode` answers from vectors computed before (keyed by the text and every
    option that changes the vector), encoding only what it has not seen; all else is the encoder's."""

    def __init__(self, encoder: Any, path: Path) -> None:
        self._encoder = encoder
        self._path = path
        self._vectors: dict[str, np.ndarray] = {}
        if path.exists():
            data = np.load(path)
            self._vectors = {k: data[k] for k in data.files}
        self.misses = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._encoder, name)

    @staticmethod
    def _key(text: str, options: dict[str, Any]) -> str:
        shown = json.dumps(options, sort_keys=True, default=str)
        return hashlib.sha1(f"{shown}\0{text}".encode()).hexdigest()

    def encode(self, sentences: Sequence[str] | str, **options: Any) -> Any:
        single = isinstance(sentences, str)
        texts = [sentences] if single else list(sentences)
        keyed = {k: v for k, v in options.items() if k not in ("batch_size", "show_progress_bar")}
        keys = [self._key(t, keyed) for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self._vectors]
        if missing:
            self.misses += len(missing)
            fresh = self._encoder.encode([texts[i] for i in missing], **{**options, "convert_to_numpy": True})
            for i, vector in zip(missing, np.asarray(fresh), strict=True):
                self._vectors[keys[i]] = vector
        out = np.stack([self._vectors[k] for k in keys])
        return out[0] if single else out

    def save(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(self._path, **self._vectors)


def backend_location(kind: str, work: Path, name: str, state: dict[str, Any]) -> tuple[Any, str | None]:
    """Where a set's collection lives on this backend: (location, backend URL or None)."""
    if kind == "folder":
        return work / "folder" / name, None
    if kind == "postgres":
        if "pg" not in state:
            import pgserver

            state["pg"] = pgserver.get_server(work / "pg", cleanup_mode="stop")
        return f"quality_{name.replace('-', '_')}", str(state["pg"].get_uri())
    if kind == "qdrant":
        return name.replace("-", "_"), f"qdrant+local://{work / 'qdrant'}"
    raise ValueError(f"unknown backend {kind!r}")


def judge(col: Any, qids: list[str], data: RetrievalSet) -> dict[str, dict[str, float]]:
    texts = [data.queries[q] for q in qids]
    qrels = {q: set(data.qrels[q]) for q in qids}
    out: dict[str, dict[str, float]] = {}
    for mode in MODES:
        rankings: list[list[str]] = []
        for i in range(0, len(texts), 256):
            rankings += [[h.id for h in hits] for hits in col.search(texts[i : i + 256], k=10, mode=mode)]
        per_query = evaluate_rankings_per_query(
            dict(zip(qids, rankings, strict=True)), qrels, k_values=(1, 5, 10)
        )
        out[mode] = {m: round(float(np.mean([q[m] for q in per_query.values()])), 4) for m in METRICS}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(KOREAN))
    parser.add_argument("--backends", default="folder,postgres")
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "munjang-bench-cache")
    parser.add_argument("--name", default="backend_quality")
    args = parser.parse_args(argv)
    env = print_environment()
    import munjang
    from munjang.search.collection.collection import Collection

    backends = args.backends.split(",")
    if backends[0] != "folder":
        parser.error("the first backend is the reference: start --backends with folder")
    encoder = munjang.load_encoder(args.model, device="cpu")
    state: dict[str, Any] = {}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in args.sets.split(","):
            data = LOADERS[name]().sample(DEFAULT_QUERIES.get(name), args.seed)
            qids = sorted(data.qrels)
            cached = CachedEncoder(encoder, args.cache_dir / "backend_quality" / f"{name}-{args.model}.npz")
            results[name] = {"corpus": len(data.corpus), "queries": len(qids), "backends": {}}
            for kind in backends:
                location, url = backend_location(kind, work, name, state)
                start = time.perf_counter()
                with Collection.create(
                    location, args.model, backend=url, encoder=cached, chunking={"enabled": False}
                ) as col:
                    col.add(list(data.corpus), list(data.corpus.values()), batch_size=32)
                    added = time.perf_counter() - start
                    scores = judge(col, qids, data)
                cached.save()
                results[name]["backends"][kind] = {"scores": scores, "add_s": round(added, 1)}
                print(
                    f"{name:14s} {kind:9s} "
                    + "  ".join(f"{m} nDCG@10 {scores[m]['ndcg@10']:.4f}" for m in MODES),
                    flush=True,
                )
            reference = results[name]["backends"]["folder"]["scores"]
            for kind in backends[1:]:
                scores = results[name]["backends"][kind]["scores"]
                results[name]["backends"][kind]["minus_folder"] = {
                    mode: {m: round(scores[mode][m] - reference[mode][m], 4) for m in METRICS}
                    for mode in MODES
                }
    worst = {
        kind: max(
            abs(d)
            for name in results
            for mode in MODES
            for d in results[name]["backends"][kind]["minus_folder"][mode].values()
        )
        for kind in backends[1:]
    }
    print("largest |difference| from folder, any set, mode and metric:", worst)
    write_result(
        args.name,
        {"model": args.model, "sets": results, "largest_abs_difference": worst, "metrics": list(METRICS)},
        env,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
