"""A collection's points in Qdrant, kept in step with its SQLite store, and the searches they answer.

One point per passage, its id the passage's label: named vectors `dense` (the embedding), `bm25`
(the passage's Kiwi tokens as a sparse vector; after a re-analysis another BM25 slot, `slots.py`)
and, with a sparse model, `splade` (`qdrant_sparse.py`),
with a multi-vector model `colbert` (`qdrant_tokens.py`),
and the payload `id`, `chunk`, `start`, `end`,
`text`, `metadata`. A writer pushes what the store changed since the watermark Qdrant holds (in the
Qdrant collection's metadata, written after the points: a crash in between repeats an idempotent
upsert); a reader only reads that watermark.

BM25 in Qdrant: a token is a sparse index (CRC-32 of the token), its weight the lucene BM25 term
part tf / (tf + k1 (1 - b + b dl / avgdl)) computed here at the mean length of the push, and Qdrant
multiplies by its IDF modifier. Those scores only choose candidates: `QdrantLexical` scores them
again exactly, with the live statistics of `qdrant_bm25.BM25Stats` and each text's token counts in
its payload, so its scores and order are munjang's in-process BM25's (`qdrant_bm25.py`). The stored
weights are written again at today's mean length only once it has drifted REWEIGHT_DRIFT from the
mean they were made at, which bounds how far past k the candidates must reach.
"""

from __future__ import annotations

import json
import math
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...._util.extras import require
from ...followers.dense import label_problems
from ..base import Filter, Queries, TopK, Watermark, ranked_rows
from .bm25 import (
    FIRST_SLOT,
    BM25Stats,
    bm25_weights,
    complete,
    growth_bound,
    members_field,
    payload_fields,
    rescore,
    stats_name,
    text_payload,
    token_index,
)
from .filters import compile_native, filter_payload, merge_kinds, retrieve_filtered
from .slots import SLOT_KEY, drop_slot, slot_low
from .sparse import sparse_config, sparse_points
from .tokens import token_points, tokens_config

if TYPE_CHECKING:
    from .backend import QdrantRecords  # which imports this module

MAX_EF = 1000
REWEIGHT_DRIFT = 0.2  # stored weights are rewritten once today's mean length is this far from theirs


class QdrantPoints:
    """The Qdrant collection of one munjang collection: its watermark, the push, and the reads."""

    def __init__(
        self, client: Any, name: str, config: dict[str, Any], writer: bool, local: bool, folder: Path
    ) -> None:
        self.models = require("qdrant_client.models")
        self.client, self.name, self.config, self.writer = client, name, config, writer
        self.folder = folder  # where the BM25 statistics files are, one per slot
        self.slot = str(config.get(SLOT_KEY) or FIRST_SLOT)  # the BM25 slot searches use
        self._stats: dict[str, BM25Stats] = {}
        self.local = local  # the embedded engine: always exact, takes no search parameters
        lexical = config.get("lexical") or {}
        self.k1, self.b = float(lexical.get("k1", 1.5)), float(lexical.get("b", 0.75))
        self.lock = threading.Lock()
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
            vectors_config={
                "dense": models.VectorParams(size=int(config["dim"]), distance=distance),
                **tokens_config(config, models),
            },
            sparse_vectors_config={
                "bm25": models.SparseVectorParams(modifier=models.Modifier.IDF),
                **sparse_config(config, models),
            },
            shard_number=int(options["shards"]) if "shards" in options else None,
            replication_factor=int(options["replicas"]) if "replicas" in options else None,
            metadata={"munjang": {**_state(Watermark(), 0, 0), "filters": 1, "key_kinds": {}}},
        )

    def _read_state(self) -> dict[str, Any]:
        metadata = self.client.get_collection(self.name).config.metadata or {}
        return dict(metadata.get("munjang") or _state(Watermark(), 0, 0))

    def write_state(self, state: dict[str, Any]) -> None:
        """Record `state` in the Qdrant collection's metadata (one write) and hold it."""
        self.client.update_collection(self.name, metadata={"munjang": state})
        self.state = state

    def stats_of(self, slot: str) -> BM25Stats:
        """The statistics of a BM25 slot (opened on first need)."""
        found = self._stats.get(slot)
        if found is None:
            found = self._stats[slot] = BM25Stats(self.folder / stats_name(slot), self.writer)
        return found

    @property
    def stats(self) -> BM25Stats:
        """The statistics of the slot searches use."""
        return self.stats_of(self.slot)

    def forget_stats(self, slot: str) -> None:
        """Close a slot's statistics (its file is about to go)."""
        found = self._stats.pop(slot, None)
        if found is not None:
            found.close()

    def adopt(self, store: QdrantRecords) -> None:
        """Make the slot the store names (`self.slot`) the state's, after a re-analysis switched to
        it: its statistics and the mean length its weights were made at (announced before the
        switch), its weights made again if that mean has drifted, the old slot dropped."""
        old = str(self.state.get("slot", FIRST_SLOT))
        pending = self.state.get("pending") or {}
        totals = self.stats.totals()
        state = {
            **self.state,
            **_state(self.watermark, totals["length_sum"], totals["texts"]),
            "slot": self.slot,
            "avgdl_low": pending.get("avgdl_low"),
            "avgdl_high": pending.get("avgdl_high"),
            "pending": None,
        }
        if pending.get("slot") != self.slot or _drifted(state):
            state.update(self.reweight(store, Watermark(totals["label"], totals["deletion"])))
        if old != self.slot:  # before the state names the new slot: a kill here drops it again
            drop_slot(self, old)
        self.write_state(state)

    def _follow_slot(self, store: QdrantRecords) -> None:
        """Take the BM25 slot the store names (a re-analysis switched it, here or in another process);
        a writer finishes a switch whose last step, in Qdrant, was interrupted."""
        slot = str(store.meta_value(SLOT_KEY) or FIRST_SLOT)
        if slot == self.slot and (not self.writer or self.state.get("slot", FIRST_SLOT) == slot):
            return
        if slot != self.slot:
            self.forget_stats(self.slot)  # a dropped slot's file: not held open
        self.slot = slot
        self.state = self._read_state()
        if self.writer and self.state.get("slot", FIRST_SLOT) != slot:
            self.adopt(store)

    @property
    def watermark(self) -> Watermark:
        return Watermark(int(self.state["label"]), int(self.state["deletion"]))

    def sync(self, store: QdrantRecords) -> bool:
        """A writer pushes what the store changed since the watermark (and the metadata its log
        says was changed in place, which no watermark shows); a reader re-reads the watermark.
        True when Qdrant moved on."""
        with self.lock:
            self._follow_slot(store)
            before = self.watermark
            if not self.writer:
                self.state = self._read_state()
                return self.watermark != before
            stale = not self.state.get("exact") and before.label > 0
            logged = store.metadata_seq()
            moved = logged > int(self.state.get("metadata_seq", 0))
            if store.watermark() == before and not stale and not moved and not _drifted(self.state):
                return False
            with store.snapshot():
                now = store.watermark()
                if stale:  # points made before the exact statistics: all of them again, once
                    self.reweight(store, now, rebuild=before.label)
                counted = self.stats.watermark
                push = _Push(counted.label)
                push.kinds = dict(self.state.get("key_kinds") or {})
                if now.deletion > before.deletion:
                    self._delete(store, before.deletion, counted)
                if now.label > before.label:
                    model, dim = self.config["model"], int(self.config["dim"])
                    for labels, vectors in store.vectors_after(model, dim, before.label, batch=2_000):
                        self._upsert(store, labels, vectors, push)
                if moved:
                    self._update_metadata(
                        store.metadata_updates_after(int(self.state.get("metadata_seq", 0))), push
                    )
                self.stats.apply(push.added, [], now)
                totals = self.stats.totals()
                avgdl = totals["length_sum"] / max(totals["texts"], 1)
                low, high = self.state.get("avgdl_low"), self.state.get("avgdl_high")
                if stale or low is None or high is None:
                    low = high = avgdl
                for made in push.made:  # every mean length this push's weights were made at
                    low, high = min(low, made), max(high, made)
                state = {
                    **_state(now, totals["length_sum"], totals["texts"]),
                    "avgdl_low": low,
                    "avgdl_high": high,
                    "exact": 1,
                    "metadata_seq": logged,
                    "splade_signed": int(bool(self.state.get("splade_signed")) or push.signed),
                    "token_norm": max(float(self.state.get("token_norm") or 0.0), push.norm),
                }
                if self.state.get("filters"):
                    state.update({"filters": 1, "key_kinds": push.kinds})
                if self.slot != FIRST_SLOT:
                    state["slot"] = self.slot
                if _drifted(state):
                    state = {**state, **self.reweight(store, now)}
            self.write_state(state)
            if moved:
                store.prune_metadata_log(logged)  # Qdrant holds these now: the log keeps only its mark
            return True

    def _update_metadata(self, updates: dict[int, str], push: _Push) -> None:
        """Metadata changed in place: the passages' payload (`metadata` and filters' `mf`) again."""
        models, operations = self.models, []
        for label, text in updates.items():
            metadata = json.loads(text)
            filterable, kinds = filter_payload(metadata)
            merge_kinds(push.kinds, kinds)
            payload = {"metadata": metadata, "mf": filterable}
            operations.append(
                models.SetPayloadOperation(set_payload=models.SetPayload(payload=payload, points=[label]))
            )
        for start in range(0, len(operations), 1000):
            self.client.batch_update_points(
                self.name, update_operations=operations[start : start + 1000], wait=True
            )

    def _delete(self, store: Any, after: int, counted: Watermark) -> None:
        """Take the texts deleted since `after` out of the statistics (those counted and not yet
        taken out: read from their points first), then the points out of Qdrant."""
        removed = store.deletions_after(after)
        if not len(removed):
            return
        if counted.deletion < store.watermark().deletion:
            uncounted = set(store.deletions_after(counted.deletion).tolist())
            wanted = [int(x) for x in removed if int(x) in uncounted and int(x) <= counted.label]
            gone: list[tuple[list[str], int]] = []
            terms, _, length = payload_fields(self.slot)
            for start in range(0, len(wanted), 1000):
                for point in self.client.retrieve(
                    self.name, ids=wanted[start : start + 1000], with_payload=[terms, length]
                ):
                    payload = point.payload or {}
                    if terms in payload:
                        gone.append((payload[terms], int(payload[length])))
            self.stats.apply([], gone, Watermark(counted.label, store.watermark().deletion))
        self.client.delete(self.name, self.models.PointIdsList(points=[int(x) for x in removed]), wait=True)

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
        members = members_field(self.slot)
        if continued:  # the last group of the previous batch went on: its first point learns of it
            self.client.set_payload(self.name, {members: groups[0]}, points=[groups[0][0]], wait=True)
        fresh = groups[1:] if continued else groups
        push.added += [tokens.get(g[0], []) for g in fresh if g[0] > push.counted]
        avgdl = push.avgdl(self.stats)
        if fresh:
            push.made.append(avgdl)
        first = {g[0]: g for g in fresh}
        splade, signed = sparse_points(self.config, store, labels, models)
        push.signed = push.signed or signed
        colbert, norm = token_points(self.config, store, labels)
        push.norm = max(push.norm, norm)
        points = []
        for label, vector in zip(labels.tolist(), np.asarray(vectors, dtype=np.float32), strict=True):
            doc = docs[label]
            named: dict[str, Any] = {"dense": vector.tolist()}
            if label in splade:
                named["splade"] = splade[label]
            if label in colbert:
                named["colbert"] = colbert[label]
            filterable, kinds = filter_payload(doc.metadata)
            merge_kinds(push.kinds, kinds)
            payload = {
                "id": doc.id, "chunk": doc.chunk, "start": doc.start, "end": doc.end,
                "text": doc.text, "metadata": doc.metadata, "mf": filterable,
            }  # fmt: skip
            if label in first:
                indices, weights = bm25_weights(tokens.get(label, []), self.k1, self.b, avgdl)
                named[self.slot] = models.SparseVector(indices=indices, values=weights)
                payload[members] = first[label]
                payload.update(text_payload(tokens.get(label, []), self.slot))
            points.append(models.PointStruct(id=label, vector=named, payload=payload))
        self.client.upsert(self.name, points=points, wait=True)
        push.open = (keys[-1], groups[-1])

    def reweight(self, store: Any, now: Watermark, rebuild: int = 0) -> dict[str, Any]:
        """Every BM25 vector again at today's mean length (once the mean its weights were made at
        has drifted REWEIGHT_DRIFT from it). `rebuild` (the label Qdrant holds points up to): also
        the statistics and each of those points' payload, from the store (points pushed before
        the statistics were kept)."""
        models = self.models
        labels, ids, tokens = store.tokens()
        texts: list[tuple[int, list[str]]] = []
        previous: tuple[str, list[str]] | None = None
        for label, doc_id, toks in zip(labels.tolist(), ids, tokens, strict=True):
            if previous is not None and previous == (doc_id, toks):
                continue  # a later passage of the same window: the first one carries the vector
            previous = (doc_id, toks)
            texts.append((int(label), toks))
        if rebuild:
            self.stats.apply([t for _, t in texts], [], now, reset=True)
            texts = [(label, t) for label, t in texts if label <= rebuild]
        totals = self.stats.totals()
        avgdl = totals["length_sum"] / max(totals["texts"], 1)
        for start in range(0, len(texts), 1000):
            part = texts[start : start + 1000]
            batch = []
            for label, toks in part:
                indices, weights = bm25_weights(toks, self.k1, self.b, avgdl)
                vector = {self.slot: models.SparseVector(indices=indices, values=weights)}
                batch.append(models.PointVectors(id=label, vector=vector))
            self.client.update_vectors(self.name, points=batch, wait=True)
            if rebuild:
                operations = [
                    models.SetPayloadOperation(
                        set_payload=models.SetPayload(payload=text_payload(t, self.slot), points=[label])
                    )
                    for label, t in part
                ]
                self.client.batch_update_points(self.name, update_operations=operations, wait=True)
        return {"avgdl_low": avgdl, "avgdl_high": avgdl}

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

    def native_filter(self, spec: Mapping[str, Any]) -> Any | None:
        """`spec` as a Qdrant filter on the points' `mf` payload, where its meaning is kept exactly
        (`qdrant_filters.py`); None for a collection whose points predate that payload."""
        if not self.state.get("filters"):
            return None
        return compile_native(spec, self.state.get("key_kinds") or {}, self.models)

    def query(
        self,
        query: Any,
        using: str,
        k: int,
        allowed: np.ndarray | None,
        params: Any = None,
        native: Any = None,
    ) -> list[tuple[int, float]]:
        """Top-k (label, score) of one query on a named vector, among `allowed` labels when given,
        or the points matching the `native` filter."""
        flt = native
        if allowed is not None:
            flt = self.models.Filter(must=[self.models.HasIdCondition(has_id=[int(x) for x in allowed])])
        found = self.client.query_points(
            self.name, query=query, using=using, limit=k, query_filter=flt,
            search_params=None if self.local else params,
            with_payload=False,
        ).points  # fmt: skip
        return [(int(p.id), float(p.score)) for p in found]


class _Push:
    """What one push adds to the statistics: the texts first seen after `counted` (the label the
    statistics had reached), and the group of passages still open at the end of a batch."""

    def __init__(self, counted: int) -> None:
        self.counted = counted
        self.added: list[list[str]] = []
        self.made: list[float] = []  # the mean lengths its weights were made at
        self.kinds: dict[str, str] = {}  # the kinds of value each metadata key has held
        self.open: tuple[tuple[str, tuple[str, ...]], list[int]] | None = None
        self.signed = False  # a SPLADE weight below zero was pushed (`qdrant_sparse.py`)
        self.norm = 0.0  # the largest ColBERT token norm pushed (`qdrant_tokens.py`)

    def avgdl(self, stats: BM25Stats) -> float:
        """The mean length the new weights are made at: the statistics' with this push's texts."""
        totals = stats.totals()
        texts = totals["texts"] + len(self.added)
        return (totals["length_sum"] + sum(len(t) for t in self.added)) / max(texts, 1)


def _drifted(state: dict[str, Any]) -> bool:
    """Whether some stored BM25 weights were computed at a mean length REWEIGHT_DRIFT from today's."""
    if not state.get("texts"):
        return False
    avgdl = state["length_sum"] / state["texts"]
    low, high = state.get("avgdl_low"), state.get("avgdl_high")
    if low is None or high is None:
        return True  # written before the range was kept
    return max(abs(low - avgdl), abs(high - avgdl)) > REWEIGHT_DRIFT * avgdl


def _state(watermark: Watermark, length_sum: int, texts: int) -> dict[str, Any]:
    return {
        "label": watermark.label,
        "deletion": watermark.deletion,
        "length_sum": length_sum,
        "texts": texts,
    }


class QdrantDense:
    """Dense search by Qdrant's query on the `dense` named vector (HNSW, or exact for index
    "exact"); a filter arrives compiled for Qdrant (`native_filter`, as `where`), or else as
    allowed labels, applied inside Qdrant's search either way."""

    persistent = False

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

    def native_filter(self, spec: Mapping[str, Any]) -> Any | None:
        return self.points.native_filter(spec)

    def tail_due(self) -> bool:
        return False  # Qdrant keeps its own state

    def apart(self) -> None:
        return None

    def retrieve(self, store: Any, queries: Queries, k: int, filter: Filter | None) -> TopK:
        """Caught up, Qdrant's top-k per query vector, filtered in Qdrant: by the filter compiled
        for it where that keeps its meaning, else by the labels it allows."""
        self.sync(store)
        native = allowed = None
        if filter is not None:
            native = filter.native("qdrant", self.native_filter)
            allowed = filter.allowed if native is None else None
        if (allowed is not None and len(allowed) == 0) or not self:
            return queries.none()
        return ranked_rows(*self.search(store, queries.encoded, k, allowed, native))

    def stored(self, store: Any, labels: Sequence[int]) -> list[Any]:
        config = self.points.config
        return list(store.vectors_of(config["model"], int(config["dim"]), np.asarray(labels, dtype=np.int64)))

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        self.sync(store)
        return label_problems("dense index", self.ids(), labels)

    def search(
        self, store: Any, vectors: np.ndarray, k: int, allowed: np.ndarray | None, where: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        models = self.points.models
        exact = self.kind == "exact"
        params = models.SearchParams(exact=exact, hnsw_ef=None if exact else min(max(self.ef, k), MAX_EF))
        labels = np.full((len(vectors), k), -1, dtype=np.int64)
        scores = np.full((len(vectors), k), -np.inf, dtype=np.float32)
        for i, vector in enumerate(np.asarray(vectors, dtype=np.float32)):
            limit = k + 1  # one more, until the last is below the k-th: no tie is cut by Qdrant's order
            while True:
                found = self.points.query(vector.tolist(), "dense", limit, allowed, params, where)
                if len(found) < limit or found[-1][1] < found[k - 1][1]:
                    break
                limit *= 2
            for j, (label, score) in enumerate(sorted(found, key=lambda x: (-x[1], x[0]))[:k]):
                labels[i, j], scores[i, j] = label, score  # ties by lower label, as the other backends
        return labels, scores


class QdrantLexical:
    """BM25 candidates by Qdrant's sparse query on the `bm25` vector (IDF modifier; the slot the
    store names, `slots.py`), scored exactly here (`qdrant_bm25.py`); kept current by the same push
    as the dense vectors."""

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

    def save_files(self, store: Any, least: int = 1) -> None:
        """No files: Qdrant holds the postings."""

    def retrieve(self, store: Any, queries: Queries, k: int, filter: Filter | None) -> TopK:
        """Caught up, the top-k per tokenized query, filtered in Qdrant: by the filter compiled for
        it where that keeps its meaning, else by the labels it allows. A search whose slot a
        re-analysis dropped while it ran is made again on the slot that replaced it."""
        self.sync(store)
        slot = self.points.slot
        try:
            return retrieve_filtered(self, queries, k, filter)
        except Exception:
            self.sync(store)
            if self.points.slot == slot:
                raise
            return retrieve_filtered(self, queries, k, filter)

    def stored(self, store: Any, labels: Sequence[int]) -> list[list[str]]:
        found = store.tokens_of(list(labels))
        return [found.get(int(x), []) for x in labels]

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        self.sync(store, wait=True)
        return [] if np.array_equal(self.labels, labels) else ["lexical index does not match the documents"]

    def search(
        self, queries: Sequence[Sequence[str]], k: int, allowed: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        """Top-k passages per tokenized query, scored exactly as munjang's in-process BM25 (ties by
        lower label): the texts Qdrant proposes, rescored with the live statistics, fetched until
        no text left out can reach the k-th score. A hit on a window's first passage is a hit, with
        its score, on each passage of the window (among `allowed`)."""
        flt, permitted = None, None
        if allowed is not None:
            models = self.points.models
            members = members_field(self.points.slot)
            condition = models.FieldCondition(key=members, match=models.MatchAny(any=allowed.tolist()))
            flt, permitted = models.Filter(must=[condition]), set(allowed.tolist())
        return self._search(queries, k, flt, permitted)

    def native_filter(self, spec: Mapping[str, Any]) -> Any | None:
        return self.points.native_filter(spec)

    def search_native(
        self, queries: Sequence[Sequence[str]], k: int, native: Any
    ) -> list[list[tuple[int, float]]]:
        """`search` among the texts whose first point matches the compiled filter (the passages of
        one window are of one document: they share its metadata)."""
        return self._search(queries, k, native, None)

    def _search(
        self, queries: Sequence[Sequence[str]], k: int, flt: Any, permitted: set[int] | None
    ) -> list[list[tuple[int, float]]]:
        points = self.points
        slot, state = points.slot, points.state
        stats = points.stats_of(slot)
        exact_ready = bool(state.get("exact")) and stats.exists
        models = points.models
        members = members_field(slot)
        n, length_sum, bound = 1, 0, 1.0  # not written by this version yet: Qdrant's scores
        df: dict[str, int] = {}
        if exact_ready:
            n, length_sum, df = stats.read(t for query in queries for t in query)
            low = slot_low(state, slot)  # None: the slot is not the state's (mid-switch): fetch all
            bound = math.inf if low is None else growth_bound(length_sum / max(n, 1), low)
        out: list[list[tuple[int, float]]] = []
        for tokens in queries:
            counts = Counter(token_index(t) for t in tokens)
            if not counts or n == 0:
                out.append([])
                continue
            indices = sorted(counts)
            query = models.SparseVector(indices=indices, values=[float(counts[i]) for i in indices])
            limit = max(2 * k, k + 16)
            while True:
                found = [
                    p
                    for p in points.client.query_points(
                        points.name, query=query, using=slot, limit=limit, query_filter=flt,
                        with_payload=[members, *payload_fields(slot)],
                    ).points
                    if p.score > 0
                ]  # fmt: skip
                exact = np.asarray([p.score for p in found], dtype=np.float32)
                if exact_ready:
                    payloads = [p.payload or {} for p in found]
                    exact = rescore(tokens, payloads, n, length_sum, df, points.k1, points.b, slot)
                fetched_all = len(found) < limit
                if complete([p.score for p in found], exact[exact > 0], k, fetched_all, bound):
                    break
                limit *= 4
            ranked = sorted(
                (-float(score), int(p.id), p)
                for p, score in zip(found, exact.tolist(), strict=True)
                if score > 0
            )[:k]
            hits = [
                (int(member), -negative)
                for negative, _, p in ranked
                for member in (p.payload or {}).get(members, [p.id])
                if permitted is None or member in permitted
            ]
            out.append(hits[:k])
        return out
