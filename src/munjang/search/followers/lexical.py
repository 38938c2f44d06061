"""A collection's in-process BM25 index, kept in step with its store: the lexical retriever of a
backend that does not answer BM25 itself (the folder's; PostgreSQL's and Qdrant's for the methods
they do not score)."""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..backends.base import Filter, Queries, TopK, Watermark

# BM25 methods kept up to date incrementally (the others are rebuilt: their scores need every document).
INCREMENTAL_METHODS = ("lucene", "robertson", "atire")
CATCH_UP_LABELS = 20_000  # passages read per step of a catch-up (~100 MB of tokens as Python lists)


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
    rebuilt methods only: an incremental catch-up is as cheap as a search).

    With `files` (a folder beside the store), the incremental index is saved there by the writer
    (`save`) and mapped by a new reader, which then catches up only from the saved watermark
    (`lexical_files.py`): opening does not read every stored token back.

    The stored tokens are analysed again when the collection's analysis changes (a user dictionary
    edit), in one transaction that moves the config's `analysis_generation`: the index notices it,
    starts over from the new tokens, and keeps its files per generation, so a stale file is never
    mapped."""

    def __init__(
        self,
        config: dict[str, Any],
        reopen: Callable[[], Any] | None = None,
        files: Path | None = None,
        owner: str = "",
    ) -> None:
        self.config = config
        self.incremental = config.get("method", "lucene") in INCREMENTAL_METHODS and "delta" not in config
        self.bm25: Any = None
        self._labels = np.zeros(0, dtype=np.int64)
        self._passage_alive = np.zeros(0, dtype=bool)
        # Passage rows starts[t]:starts[t + 1] (into the labels) share BM25 text t.
        self.starts = np.zeros(1, dtype=np.int64)
        self.watermark: Watermark | None = None
        self.saved: Watermark | None = None
        self.files, self.owner = files, owner  # owner: the collection's id, recorded in its files
        self.generation: int | None = None
        self._reopen = reopen
        self._lock = threading.Lock()
        self._applying = threading.Lock()  # one catch-up at a time, and none while a save reads the state
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
        self._follow_analysis(store)
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

    def _follow_analysis(self, store: Any) -> None:
        """Start over when the stored tokens were analysed again since the index was built."""
        generation = store.meta_value("analysis_generation") or 0
        if generation == self.generation:
            return
        with self._applying, self._lock:
            if self.generation is not None:
                self.bm25, self.watermark, self.saved = None, None, None
                self._labels = np.zeros(0, dtype=np.int64)
                self._passage_alive = np.zeros(0, dtype=bool)
                self.starts = np.zeros(1, dtype=np.int64)
            self.generation = generation

    def _folder(self) -> Path:
        """The files of the current analysis generation."""
        assert self.files is not None
        return self.files / f"analysis-{self.generation}" if self.generation else self.files

    @property
    def persistent(self) -> bool:
        """Whether the index is kept in files beside the store (an incremental one, with `files`)."""
        return self.files is not None and self.incremental

    @property
    def unsaved(self) -> int:
        """Passages added and deletions applied since the last save (all of them, if never saved)."""
        now, saved = self.watermark or Watermark(), self.saved or Watermark()
        return (now.label - saved.label) + (now.deletion - saved.deletion)

    def _catch_up(self, store: Any) -> bool:
        with self._applying:
            return self._apply(store)

    def _apply(self, store: Any) -> bool:
        """Apply the passages added and the labels deleted since the watermark (from the saved
        index, when there is one and this is the first catch-up)."""
        from ..index.incremental_bm25 import IncrementalBM25

        if self.bm25 is None and self.persistent:
            self._restore(store)
        seen = self.watermark or Watermark()
        fresh = self.bm25 is None
        if fresh:
            options = {k: v for k, v in self.config.items() if k in ("k1", "b", "method")}
            self.bm25 = IncrementalBM25(**options)
        bm25: Any = self.bm25
        parts: list[np.ndarray] = []
        firsts: list[int] = []
        with store.snapshot():
            now = store.watermark()
            deleted = np.zeros(0, np.int64) if fresh else store.deletions_after(seen.deletion)
            if len(deleted):
                self._kill(bm25, deleted)
            # The passages a range at a time, so a restored or new collection's catch-up holds one
            # range's tokens as Python lists, not the whole collection's (4-5 kB a passage).
            after, previous, count = seen.label, None, 0
            while after < now.label:
                upto = min(after + CATCH_UP_LABELS, now.label)
                labels, ids, tokens = store.tokens(after=after, upto=upto)
                texts = []
                for i, key in enumerate(zip(ids, tokens, strict=True)):
                    if key != previous:  # a later passage of the same text: the first one holds it
                        firsts.append(count + i)
                        texts.append(key[1])
                    previous = key
                bm25.add(texts)
                parts.append(labels)
                count += len(labels)
                after = upto
        labels = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        with self._lock:
            base = len(self._labels)
            self._labels = np.concatenate([self._labels, labels])
            self._passage_alive = np.concatenate([self._passage_alive, np.ones(len(labels), dtype=bool)])
            new_starts = base + np.asarray(firsts, dtype=np.int64)
            self.starts = np.concatenate([self.starts[:-1], new_starts, [base + len(labels)]])
            self.watermark = now
        return bool(len(labels) or len(deleted))

    def _restore(self, store: Any) -> None:
        """Map the saved index, if a whole one not ahead of the store is found."""
        from ..index.incremental_bm25 import IncrementalBM25
        from .lexical_files import load

        folder = self._folder()
        snap = load(folder, store.watermark, self.owner) if folder.is_dir() else None
        if snap is None:
            return
        options = {k: v for k, v in self.config.items() if k in ("k1", "b", "method")}
        bm25 = IncrementalBM25.restored(snap.segments, snap.lengths, snap.alive, **options)
        with self._lock:
            self.bm25, self._labels, self.starts = bm25, snap.labels, snap.starts
            self._passage_alive = np.repeat(snap.alive, np.diff(snap.starts))
            self.watermark = self.saved = snap.watermark

    def save(self) -> None:
        """Write what changed since the last save to the files (the writer only, under its lock).
        A failure to write (a full disk) is logged, not raised: the files are derived data, and the
        next save or a reader's catch-up from the store covers the gap."""
        if not self.persistent or self.bm25 is None:
            return
        from .lexical_files import Snapshot, save

        with self._applying:
            with self._lock:
                watermark, labels, starts = self.watermark, self._labels, self.starts
            if watermark is None or watermark == self.saved:
                return
            segments, lengths, alive = self.bm25.state()
            try:
                snap = Snapshot(watermark, segments, lengths, alive, labels, starts)
                written = save(self._folder(), snap, self.owner)
            except OSError as e:
                logging.getLogger(__name__).warning("munjang: lexical index not saved: %s", e)
                return
            self.bm25.replace_segments(written)
            self.saved = watermark
            self._drop_other_generations()

    def _drop_other_generations(self) -> None:
        """Remove the files of earlier analysis generations (a reader mapping them keeps its map)."""
        assert self.files is not None
        current = self._folder()
        for path in self.files.iterdir():
            if path.is_dir() and path != current and path.name.startswith("analysis-"):
                shutil.rmtree(path, ignore_errors=True)
            elif self.generation and path.is_file():
                path.unlink(missing_ok=True)

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
        from ..index.bm25 import BM25Index

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

    def retrieve(self, store: Any, queries: Queries, k: int, filter: Filter | None) -> TopK:
        """Caught up, the best `k` passages per tokenized query among the labels `filter` allows."""
        self.sync(store)
        allowed = None if filter is None else filter.allowed
        if allowed is not None and len(allowed) == 0:
            return queries.none()
        return self.search(queries.encoded, k, allowed)

    def stored(self, store: Any, labels: Sequence[int]) -> list[list[str]]:
        """Each label's stored BM25 tokens (its window's, for a passage of a window)."""
        found = store.tokens_of(list(labels))
        return [found.get(int(x), []) for x in labels]

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        """The index's labels against the store's, and (with files) every saved file verified."""
        from .lexical_files import problems

        self.sync(store, wait=True)
        found = [] if np.array_equal(self.labels, labels) else ["lexical index does not match the documents"]
        return found + (problems(self._folder(), self.owner) if self.persistent and self.files else [])

    def save_files(self, store: Any, least: int = 1) -> None:
        """Bring the saved files up to the store (what it added: a new reader maps them), once at
        least `least` passages and deletions are unsaved; nothing without files."""
        if self.persistent:
            self.sync(store)
            if self.unsaved >= least:
                self.save()

    def search(
        self, queries: Sequence[Sequence[str]], k: int, allowed: np.ndarray | None = None
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
