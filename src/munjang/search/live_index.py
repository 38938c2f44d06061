"""Indexes kept in step with a collection's document store.

Each index remembers the store `Watermark` it has applied. `sync` reads, in one snapshot of the
database, the documents added and the labels deleted since then and applies them. Adds replace and
removes ignore absent labels, so applying a change twice is harmless: an index saved at any moment
(or lost) is brought up to date by replaying from its watermark.
"""

from __future__ import annotations

import math
import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

from .exact import ExactIndex
from .store import DocumentStore, Watermark

# BM25 methods kept up to date incrementally (the others are rebuilt: their scores need every document).
INCREMENTAL_METHODS = ("lucene", "robertson", "atire")
# Up to this many documents, a search that must rank all of them (or a filtered few) is exact.
EXHAUSTIVE_LIMIT = 20_000


class VectorIndex(Protocol):
    """What ExactIndex and HNSWIndex share: labelled vectors, top-k search, larger score = better."""

    def __len__(self) -> int: ...
    def add(self, ids: Any, vectors: Any) -> None: ...
    def remove(self, ids: Any) -> Any: ...
    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]: ...
    def ids(self) -> np.ndarray: ...
    def memory_bytes(self) -> int: ...


def replay(
    store: Any, index: Any, since: Watermark, added: Callable[[int], Iterable[tuple[np.ndarray, Any]]]
) -> Watermark:
    """Apply to `index`, in one snapshot of the store, the labels deleted since `since` and the
    (labels, values) batches `added(after_label)` reads; the watermark reached."""
    with store.snapshot():
        now = store.watermark()
        if now.deletion > since.deletion:
            removed = store.deletions_after(since.deletion)
            if len(removed):
                index.remove(removed)
        if now.label > since.label:
            for labels, values in added(since.label):
                index.add(labels, values)
    return now


class StoreFollower(ABC):
    """An extra retriever's index and the store watermark it has applied, caught up under a lock
    (searches on several threads may each find it behind); `_added` names what the store holds for it."""

    def __init__(self, model: str, dim: int, index: Any) -> None:
        self.model, self.dim = model, int(dim)
        self.index = index
        self.watermark = Watermark()
        self._lock = threading.Lock()

    @abstractmethod
    def _added(self, store: Any, after: int) -> Iterable[tuple[np.ndarray, Any]]:
        """The (labels, values) batches the store holds for this retriever after label `after`."""

    def sync(self, store: Any) -> bool:
        """Apply what the store changed since the watermark; True if anything was applied."""
        with self._lock:
            if store.watermark() == self.watermark:
                return False
            self.watermark = replay(store, self.index, self.watermark, partial(self._added, store))
            return True


class DenseIndex:
    """The collection's vector index: exact (in memory, rebuilt from the store on open) or HNSW
    (saved in the folder, caught up from the store on open)."""

    FILE = re.compile(r"dense-(\d+)-(\d+)\.hnsw")
    sql_filters = False  # filters arrive as a list of allowed labels

    def __init__(self, kind: str, dim: int, metric: str, model: str, hnsw: dict[str, Any]) -> None:
        if kind not in ("exact", "hnsw"):
            raise ValueError(f"unknown index kind {kind!r}; choose exact or hnsw")
        self.kind, self.dim, self.metric, self.model, self.hnsw = kind, dim, metric, model, hnsw
        self.index: Any = None
        self.watermark = Watermark()
        self.saved = Watermark()

    @property
    def persistent(self) -> bool:
        """An HNSW graph is saved beside the store (rebuilding it is slow); an exact index is not."""
        return self.kind == "hnsw"

    def _new(self) -> Any:
        if self.kind == "exact":
            return ExactIndex(self.dim, self.metric)
        from .ann import HNSWIndex

        return HNSWIndex(self.dim, metric=self.metric, **self.hnsw)

    def load(self, folder: Path) -> None:
        """The newest saved HNSW file whose name carries its watermark, else an empty index."""
        self.index = self._new()
        self.watermark = self.saved = Watermark()
        if self.kind != "hnsw":
            return
        from .ann import HNSWIndex

        for path in sorted(
            self._saved_files(folder),
            key=lambda p: (self._mark(p).label, self._mark(p).deletion),
            reverse=True,
        ):
            try:
                self.index = HNSWIndex.load(path)
            except Exception:  # a damaged derived file is rebuilt from the store
                continue
            self.watermark = self.saved = self._mark(path)
            return

    def _saved_files(self, folder: Path) -> list[Path]:
        return [p for p in folder.iterdir() if self.FILE.fullmatch(p.name)]

    def _mark(self, path: Path) -> Watermark:
        match = self.FILE.fullmatch(path.name)
        assert match is not None
        return Watermark(int(match.group(1)), int(match.group(2)))

    def sync(self, store: DocumentStore) -> bool:
        """Apply what the store changed since the watermark; True if anything was applied."""
        if self.index is None:
            self.index = self._new()
        now = store.watermark()
        if now == self.watermark:
            return False
        self.watermark = replay(
            store, self.index, self.watermark, lambda after: store.vectors_after(self.model, self.dim, after)
        )
        return True

    def search(
        self, store: DocumentStore, vectors: np.ndarray, k: int, allowed: np.ndarray | None, where: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (labels, scores) per query vector, among `allowed` labels when given (`where`, the
        SQL form of the same filter, is for the PostgreSQL index and unused here)."""
        index = self.index
        if allowed is None and self.kind == "hnsw" and k >= len(index) <= EXHAUSTIVE_LIMIT:
            # Asked to rank everything: a graph walk may not reach every node, an exact pass does.
            return self._exact_subset(store, vectors, k, index.ids())
        if allowed is None:
            return cast(tuple[np.ndarray, np.ndarray], index.search(vectors, k))
        if isinstance(index, ExactIndex):
            return index.search(vectors, k, allowed=allowed)
        return self._filtered_ann(store, vectors, k, allowed)

    def _filtered_ann(
        self, store: DocumentStore, vectors: np.ndarray, k: int, allowed: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """HNSW cannot filter inside the graph walk here, so: a selective filter searches its few
        documents exactly; a broad one over-fetches from the graph and drops what fails it, falling
        back to exact search for any query left short."""
        index = self.index
        fraction = len(allowed) / max(len(index), 1)
        if len(allowed) <= EXHAUSTIVE_LIMIT or fraction < 0.05:
            return self._exact_subset(store, vectors, k, allowed)
        fetch = min(len(index), math.ceil(2 * k / fraction))
        labels, scores = index.search(vectors, fetch)
        keep = np.isin(labels, allowed) & (labels >= 0)
        out_l = np.full((len(vectors), k), -1, dtype=np.int64)
        out_s = np.full((len(vectors), k), -np.inf, dtype=np.float32)
        for i in range(len(vectors)):
            row_l, row_s = labels[i][keep[i]][:k], scores[i][keep[i]][:k]
            if len(row_l) < min(k, len(allowed)):
                exact_l, exact_s = self._exact_subset(store, vectors[i : i + 1], k, allowed)
                row_l, row_s = exact_l[0], exact_s[0]
            out_l[i, : len(row_l)], out_s[i, : len(row_s)] = row_l, row_s
        return out_l, out_s

    def _exact_subset(
        self, store: DocumentStore, vectors: np.ndarray, k: int, allowed: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        subset = ExactIndex(self.dim, self.metric)
        subset.add(allowed, store.vectors_of(self.model, self.dim, allowed))
        return subset.search(vectors, k)

    def save(self, folder: Path) -> None:
        """Write the HNSW graph under a name that records its watermark, then drop older files.

        The save itself is atomic (temporary file, then rename), so a crash leaves either the old
        file or the new one, and whichever is found is caught up from the store on open."""
        if self.kind != "hnsw" or self.index is None or self.saved == self.watermark:
            return
        mark = self.watermark
        # A save killed midway leaves a hidden temporary sibling; the caller holds the writer lock,
        # so no other save is running and any such file is stale.
        for stale in folder.glob(".dense-*.tmp*"):
            stale.unlink(missing_ok=True)
        target = folder / f"dense-{mark.label}-{mark.deletion}.hnsw"
        self.index.save(target)
        self.saved = mark
        for path in self._saved_files(folder):
            if path != target:
                for extra in (path, *path.parent.glob(path.name + ".*")):
                    if extra.exists():
                        os.unlink(extra)


class LexicalIndex:
    """BM25 over the stored tokens, kept in step with the store by what changed since its watermark:
    the passages added are appended (`IncrementalBM25`: a commit costs what it adds), the labels
    deleted are marked dead. The tokens are stored per passage, so nothing is re-tokenized. The
    methods whose scores need every document (bm25l, bm25+) are rebuilt instead, on bm25s.

    The passages of one window of a document share their tokens (`passages.py`: BM25 reads each
    passage with its window). BM25 holds each such text once, so its document frequencies and mean
    length count a window once however many passages were cut from it, and a hit on it is a hit on
    each of its passages, with the same score. Consecutive passages of one document with equal tokens
    are one text; nothing else is merged.

    With `reopen` (a function that opens another connection to the same store), a rebuild after
    the first runs on a background thread while searches go on with the index as it was (the
    rebuilt methods only: an incremental catch-up is as cheap as a search)."""

    def __init__(self, config: dict[str, Any], reopen: Callable[[], Any] | None = None) -> None:
        self.config = config
        self.incremental = config.get("method", "lucene") in INCREMENTAL_METHODS and "delta" not in config
        self.bm25: Any = None
        self._labels = np.zeros(0, dtype=np.int64)
        self._passage_alive = np.zeros(0, dtype=bool)
        # Passage rows starts[t]:starts[t + 1] (into the labels) share BM25 text t.
        self.starts = np.zeros(1, dtype=np.int64)
        self.watermark: Watermark | None = None
        self._reopen = reopen
        self._lock = threading.Lock()
        self._rebuilding: threading.Thread | None = None

    @property
    def ready(self) -> bool:
        """Whether the index has been built once (a server brings a built one up to date after a write)."""
        return self.bm25 is not None

    @property
    def labels(self) -> np.ndarray:
        """The labels of the live passages it holds, ascending."""
        with self._lock:
            return self._labels[self._passage_alive].copy()

    def sync(self, store: Any, wait: bool = False) -> bool:
        """Catch up with the store; True when the index changed. In the background mode a stale
        rebuilt index is kept and a rebuild started, unless `wait` asks for the current state."""
        now = store.watermark()
        if self.watermark == now and self.bm25 is not None:
            return False
        if self.incremental:
            return self._catch_up(store)
        if self._reopen is None or self.bm25 is None or wait:
            self._install(*self._build(store))
            return True
        with self._lock:
            if self._rebuilding is None or not self._rebuilding.is_alive():
                self._rebuilding = threading.Thread(target=self._rebuild, name="munjang-bm25", daemon=True)
                self._rebuilding.start()
        return False

    def _catch_up(self, store: Any) -> bool:
        """Apply the passages added and the labels deleted since the watermark."""
        from .incremental_bm25 import IncrementalBM25

        seen = self.watermark or Watermark()
        with store.snapshot():
            now = store.watermark()
            labels, ids, tokens = store.tokens(after=seen.label)
            deleted = store.deletions_after(seen.deletion) if self.bm25 is not None else np.zeros(0, np.int64)
        if self.bm25 is None:
            options = {k: v for k, v in self.config.items() if k in ("k1", "b", "method")}
            self.bm25 = IncrementalBM25(**options)
        bm25: Any = self.bm25
        if len(deleted):
            self._kill(bm25, deleted)
        # A document's passages are committed together, so a text never spans two catch-ups.
        firsts = [
            i for i in range(len(labels)) if i == 0 or ids[i] != ids[i - 1] or tokens[i] != tokens[i - 1]
        ]
        bm25.add([tokens[i] for i in firsts])
        with self._lock:
            base = len(self._labels)
            self._labels = np.concatenate([self._labels, labels])
            self._passage_alive = np.concatenate([self._passage_alive, np.ones(len(labels), dtype=bool)])
            new_starts = base + np.asarray(firsts, dtype=np.int64)
            self.starts = np.concatenate([self.starts[:-1], new_starts, [base + len(labels)]])
            self.watermark = now
        return bool(len(labels) or len(deleted))

    def _kill(self, bm25: Any, deleted: np.ndarray) -> None:
        """Mark the passages of deleted labels dead, and their texts in BM25."""
        with self._lock:
            rows = np.searchsorted(self._labels, deleted)
            found = rows < len(self._labels)
            rows = rows[found][self._labels[rows[found]] == deleted[found]]
            self._passage_alive[rows] = False
            texts = np.searchsorted(self.starts, rows, side="right") - 1
        bm25.kill(texts)

    def _build(self, store: Any) -> tuple[Any, np.ndarray, np.ndarray, Watermark]:
        from .lexical import BM25Index

        with store.snapshot():
            now = store.watermark()
            labels, ids, tokens = store.tokens()
        firsts = [
            i for i in range(len(labels)) if i == 0 or ids[i] != ids[i - 1] or tokens[i] != tokens[i - 1]
        ]
        bm25 = BM25Index(**self.config)
        if firsts:
            bm25.index_tokens([tokens[i] for i in firsts])
        return bm25, labels, np.asarray([*firsts, len(labels)], dtype=np.int64), now

    def _install(self, bm25: Any, labels: np.ndarray, starts: np.ndarray, watermark: Watermark) -> None:
        with self._lock:
            old = self.watermark
            if old is None or (watermark.label, watermark.deletion) >= (old.label, old.deletion):
                self.bm25, self._labels, self.starts, self.watermark = bm25, labels, starts, watermark
                self._passage_alive = np.ones(len(labels), dtype=bool)

    def search(
        self, queries: list[list[str]], k: int, allowed: np.ndarray | None
    ) -> list[list[tuple[int, float]]]:
        """The best `k` passages (label, BM25 score) for each tokenized query, among the `allowed`
        labels when given: the best texts, each giving its passages in label order."""
        with self._lock:
            bm25, labels, starts, alive = self.bm25, self._labels, self.starts, self._passage_alive
        if bm25 is None or len(labels) == 0:
            return [[] for _ in queries]
        keep = alive if allowed is None else alive & np.isin(labels, allowed)
        texts = None  # dead texts are dead in BM25 too: only a filter narrows the texts searched
        if allowed is not None:
            texts = np.unique(np.searchsorted(starts, np.flatnonzero(keep), side="right") - 1)
            if len(texts) == 0:
                return [[] for _ in queries]
        out: list[list[tuple[int, float]]] = []
        for query in queries:
            if self.incremental:
                hits = bm25.search(query, k, texts)
            else:
                hits = [(h.row, h.score) for h in bm25.search_tokens([query], k, rows=texts)[0]]
            found: list[tuple[int, float]] = []
            for row, score in hits:
                rows = range(int(starts[row]), int(starts[row + 1]))
                found += [(int(labels[r]), float(score)) for r in rows if keep[r]]
            out.append(found[:k])
        return out

    def _rebuild(self) -> None:
        assert self._reopen is not None
        store = self._reopen()
        try:
            self._install(*self._build(store))
        finally:
            store.close()


def label_problems(what: str, held: np.ndarray, labels: np.ndarray) -> list[str]:
    """One problem line when an index's labels (`held`) differ from the stored passages' `labels`."""
    held = np.sort(held)
    if np.array_equal(held, labels):
        return []
    missing, extra = np.setdiff1d(labels, held), np.setdiff1d(held, labels)
    return [f"{what}: {len(missing)} documents missing, {len(extra)} deleted ones left"]
