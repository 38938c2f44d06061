"""A collection's points in Qdrant, kept in step with its SQLite store, and the searches they answer.

One point per passage, its id the passage's label: named vectors `dense` (the embedding) and `bm25`
(the passage's Kiwi tokens as a sparse vector), and the payload `id`, `chunk`, `start`, `end`,
`text`, `metadata`. A writer pushes what the store changed since the watermark Qdrant holds (in the
Qdrant collection's metadata, written after the points: a crash in between repeats an idempotent
upsert); a reader only reads that watermark.

BM25 in Qdrant: a token is a sparse index (CRC-32 of the token), its weight the lucene BM25 term
part tf / (tf + k1 (1 - b + b dl / avgdl)) computed here, and Qdrant multiplies by its IDF modifier,
ln(1 + (N - df + 0.5) / (df + 0.5)), lucene's idf. avgdl is the mean length when a passage was pushed;
once the weights in Qdrant were made at an avgdl over 1% from today's, every BM25 vector is written
again at today's (`_reweight`). The mean counts the texts added, not those deleted since.
"""

from __future__ import annotations

import threading
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...extras import require
from .base import Watermark

MAX_EF = 1000


def token_index(token: str) -> int:
    """The sparse index of a token (CRC-32: stable across processes and versions)."""
    return zlib.crc32(token.encode("utf-8"))


def bm25_weights(tokens: Sequence[str], k1: float, b: float, avgdl: float) -> tuple[list[int], list[float]]:
    """(indices, weights) of a passage's BM25 sparse vector, the lucene term part per token."""
    counts = Counter(token_index(t) for t in tokens)
    norm = k1 * (1.0 - b + b * len(tokens) / max(avgdl, 1e-9))
    indices = sorted(counts)
    return indices, [counts[i] / (counts[i] + norm) for i in indices]


class QdrantPoints:
    """The Qdrant collection of one munjang collection: its watermark, the push, and the reads."""

    def __init__(self, client: Any, name: str, config: dict[str, Any], writer: bool, local: bool) -> None:
        self.models = require("qdrant_client.models")
        self.client, self.name, self.config, self.writer = client, name, config, writer
        self.local = local  # the embedded engine: always exact, takes no search parameters
        lexical = config.get("lexical") or {}
        self.k1, self.b = float(lexical.get("k1", 1.5)), float(lexical.get("b", 0.75))
        self._lock = threading.Lock()
        self.state = self._read_state()

    @staticmethod
    def create_collection(client: Any, name: str, config: dict[str, Any], options: dict[str, str]) -> None:
        """The Qdrant collection for a new munjang collection (`shards`, `replicas` from the URL)."""
        models = require("qdrant_client.models")
        if client.collection_exists(name):
            raise ValueError(f"Qdrant already has a collection {name!r}: choose another name")
        distance = models.Distance.COSINE if config["metric"] == "cosine" else models.Distance.DOT
        client.create_collection(
            name,
            vectors_config={"dense": models.VectorParams(size=int(config["dim"]), distance=distance)},
            sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)},
            shard_number=int(options["shards"]) if "shards" in options else None,
            replication_factor=int(options["replicas"]) if "replicas" in options else None,
            metadata={"munjang": _state(Watermark(), 0, 0)},
        )

    def _read_state(self) -> dict[str, Any]:
        metadata = self.client.get_collection(self.name).config.metadata or {}
        return dict(metadata.get("munjang") or _state(Watermark(), 0, 0))

    @property
    def watermark(self) -> Watermark:
        return Watermark(int(self.state["label"]), int(self.state["deletion"]))

    def sync(self, store: Any) -> bool:
        """A writer pushes what the store changed since the watermark; a reader re-reads the
        watermark. True when Qdrant moved on."""
        with self._lock:
            before = self.watermark
            if not self.writer:
                self.state = self._read_state()
                return self.watermark != before
            if store.watermark() == before and not _drifted(self.state):
                return False
            with store.snapshot():
                now = store.watermark()
                push = _Push(int(self.state["length_sum"]), int(self.state["texts"]))
                push.low, push.high = self.state.get("avgdl_low"), self.state.get("avgdl_high")
                if now.deletion > before.deletion:
                    removed = store.deletions_after(before.deletion)
                    if len(removed):
                        self.client.delete(
                            self.name, self.models.PointIdsList(points=[int(x) for x in removed]), wait=True
                        )
                if now.label > before.label:
                    model, dim = self.config["model"], int(self.config["dim"])
                    for labels, vectors in store.vectors_after(model, dim, before.label, batch=2_000):
                        self._upsert(store, labels, vectors, push)
                state = {
                    **_state(now, push.length_sum, push.texts),
                    "avgdl_low": push.low,
                    "avgdl_high": push.high,
                }
                if _drifted(state):
                    state = self._reweight(store, state)
            self.client.update_collection(self.name, metadata={"munjang": state})
            self.state = state
            return True

    def _upsert(self, store: Any, labels: np.ndarray, vectors: np.ndarray, push: _Push) -> None:
        """One batch of passages as points. Consecutive passages of a document with equal tokens
        (one window, `passages.py`) are one BM25 text: its first passage carries the sparse vector
        and lists the group in `bm25_members`, so N, df and avgdl count the window once."""
        models = self.models
        docs = store.documents(labels)
        tokens = store.tokens_of(labels)
        groups: list[list[int]] = [] if push.open is None else [push.open[1]]
        keys: list[tuple[str, tuple[str, ...]]] = [] if push.open is None else [push.open[0]]
        for label in labels.tolist():
            key = (docs[label].id, tuple(tokens.get(label, [])))
            if keys and keys[-1] == key:
                groups[-1].append(label)
            else:
                keys.append(key)
                groups.append([label])
        continued = push.open is not None
        if continued:  # the last group of the previous batch went on: its first point learns of it
            self.client.set_payload(self.name, {"bm25_members": groups[0]}, points=[groups[0][0]], wait=True)
        fresh = groups[1:] if continued else groups
        for group in fresh:
            push.length_sum += len(tokens.get(group[0], []))
        push.texts += len(fresh)
        avgdl = push.length_sum / max(push.texts, 1)
        if fresh:
            push.low = avgdl if push.low is None else min(push.low, avgdl)
            push.high = avgdl if push.high is None else max(push.high, avgdl)
        first = {g[0]: g for g in fresh}
        points = []
        for label, vector in zip(labels.tolist(), np.asarray(vectors, dtype=np.float32), strict=True):
            doc = docs[label]
            named: dict[str, Any] = {"dense": vector.tolist()}
            payload = {
                "id": doc.id, "chunk": doc.chunk, "start": doc.start, "end": doc.end,
                "text": doc.text, "metadata": doc.metadata,
            }  # fmt: skip
            if label in first:
                indices, weights = bm25_weights(tokens.get(label, []), self.k1, self.b, avgdl)
                named["bm25"] = models.SparseVector(indices=indices, values=weights)
                payload["bm25_members"] = first[label]
            points.append(models.PointStruct(id=label, vector=named, payload=payload))
        self.client.upsert(self.name, points=points, wait=True)
        push.open = (keys[-1], groups[-1])

    def _reweight(self, store: Any, state: dict[str, Any]) -> dict[str, Any]:
        """Every BM25 vector again at today's avgdl, once the avgdl the weights were computed with
        has drifted from it by over 1% (rare: the mean length settles as a collection grows)."""
        models = self.models
        labels, ids, tokens = store.tokens()
        avgdl = state["length_sum"] / max(state["texts"], 1)
        batch: list[Any] = []
        previous: tuple[str, list[str]] | None = None
        for label, doc_id, toks in zip(labels.tolist(), ids, tokens, strict=True):
            if previous is not None and previous == (doc_id, toks):
                continue  # a later passage of the same window: the first one carries the vector
            previous = (doc_id, toks)
            indices, weights = bm25_weights(toks, self.k1, self.b, avgdl)
            vector = {"bm25": models.SparseVector(indices=indices, values=weights)}
            batch.append(models.PointVectors(id=int(label), vector=vector))
            if len(batch) >= 1000:
                self.client.update_vectors(self.name, points=batch, wait=True)
                batch = []
        if batch:
            self.client.update_vectors(self.name, points=batch, wait=True)
        return {**state, "avgdl_low": avgdl, "avgdl_high": avgdl}

    def count(self) -> int:
        return int(self.client.count(self.name, exact=True).count)

    def ids(self) -> np.ndarray:
        """Every point id, ascending."""
        out: list[int] = []
        offset = None
        while True:
            points, offset = self.client.scroll(
                self.name, limit=10_000, offset=offset, with_payload=False, with_vectors=False
            )
            out.extend(int(p.id) for p in points)
            if offset is None:
                break
        return np.array(sorted(out), dtype=np.int64)

    def query(
        self, query: Any, using: str, k: int, allowed: np.ndarray | None, params: Any = None
    ) -> list[tuple[int, float]]:
        """Top-k (label, score) of one query on a named vector, among `allowed` labels when given."""
        flt = None
        if allowed is not None:
            flt = self.models.Filter(must=[self.models.HasIdCondition(has_id=[int(x) for x in allowed])])
        found = self.client.query_points(
            self.name, query=query, using=using, limit=k, query_filter=flt,
            search_params=None if self.local else params,
            with_payload=False,
        ).points  # fmt: skip
        return [(int(p.id), float(p.score)) for p in found]


class _Push:
    """What one push has counted: BM25 texts and their total length, and the group still open."""

    def __init__(self, length_sum: int, texts: int) -> None:
        self.length_sum, self.texts = length_sum, texts
        self.open: tuple[tuple[str, tuple[str, ...]], list[int]] | None = None
        self.low: float | None = None  # the least and greatest avgdl the stored weights were made with
        self.high: float | None = None


def _drifted(state: dict[str, Any]) -> bool:
    """Whether some stored BM25 weights were computed at an avgdl over 1% from today's."""
    if not state.get("texts"):
        return False
    avgdl = state["length_sum"] / state["texts"]
    low, high = state.get("avgdl_low"), state.get("avgdl_high")
    if low is None or high is None:
        return True  # written before the range was kept
    return max(abs(low - avgdl), abs(high - avgdl)) > 0.01 * avgdl


def _state(watermark: Watermark, length_sum: int, texts: int) -> dict[str, Any]:
    return {
        "label": watermark.label,
        "deletion": watermark.deletion,
        "length_sum": length_sum,
        "texts": texts,
    }


class QdrantDense:
    """Dense search by Qdrant's query on the `dense` named vector (HNSW, or exact for index
    "exact"); filters arrive as allowed labels, applied inside Qdrant's search."""

    persistent = False
    sql_filters = False

    def __init__(self, points: QdrantPoints) -> None:
        self.points = points
        self.kind = points.config["index"]
        self.ef = int((points.config.get("hnsw") or {}).get("expansion_search", 64))
        self.index = self
        self.saved = Watermark()
        self.watermark = points.watermark

    def sync(self, store: Any) -> bool:
        changed = self.points.sync(store)
        self.watermark = self.points.watermark
        return changed

    def __len__(self) -> int:
        return self.points.count()

    def __bool__(self) -> bool:
        return self.points.count() > 0

    def ids(self) -> np.ndarray:
        return self.points.ids()

    def memory_bytes(self) -> int:
        return 0  # Qdrant's memory, not this process's

    def search(
        self, store: Any, vectors: np.ndarray, k: int, allowed: np.ndarray | None, where: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        models = self.points.models
        exact = self.kind == "exact"
        params = models.SearchParams(exact=exact, hnsw_ef=None if exact else min(max(self.ef, k), MAX_EF))
        labels = np.full((len(vectors), k), -1, dtype=np.int64)
        scores = np.full((len(vectors), k), -np.inf, dtype=np.float32)
        for i, vector in enumerate(np.asarray(vectors, dtype=np.float32)):
            for j, (label, score) in enumerate(
                self.points.query(vector.tolist(), "dense", k, allowed, params)
            ):
                labels[i, j], scores[i, j] = label, score
        return labels, scores


class QdrantLexical:
    """BM25 by Qdrant's sparse query on the `bm25` vector (IDF modifier); kept current by the same
    push as the dense vectors."""

    incremental = True

    def __init__(self, points: QdrantPoints, config: dict[str, Any]) -> None:
        self.points = points
        self.config = config

    @property
    def ready(self) -> bool:
        return True

    @property
    def labels(self) -> np.ndarray:
        return self.points.ids()

    def sync(self, store: Any, wait: bool = False) -> bool:
        return self.points.sync(store)

    def search(
        self, queries: Sequence[Sequence[str]], k: int, allowed: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        """Top-k passages per tokenized query: a hit on a window's first passage is a hit, with
        its score, on each passage of the window (among `allowed`)."""
        models = self.points.models
        flt = None
        if allowed is not None:
            condition = models.FieldCondition(key="bm25_members", match=models.MatchAny(any=allowed.tolist()))
            flt = models.Filter(must=[condition])
        permitted = None if allowed is None else set(allowed.tolist())
        out: list[list[tuple[int, float]]] = []
        for tokens in queries:
            counts = Counter(token_index(t) for t in tokens)
            if not counts:
                out.append([])
                continue
            indices = sorted(counts)
            query = models.SparseVector(indices=indices, values=[float(counts[i]) for i in indices])
            found = self.points.client.query_points(
                self.points.name, query=query, using="bm25", limit=k, query_filter=flt,
                with_payload=["bm25_members"],
            ).points  # fmt: skip
            hits = [
                (int(member), float(p.score))
                for p in found
                if p.score > 0
                for member in (p.payload or {}).get("bm25_members", [p.id])
                if permitted is None or member in permitted
            ]
            out.append(hits[:k])
        return out
