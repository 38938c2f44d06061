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
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

import numpy as np

from ..backends.base import Filter, Queries, Store, TopK, Watermark, ranked_rows
from ..index.array_file import verify_arrays
from ..index.exact import ExactIndex, _normalized
from ..index.mapped_exact import MappedExactIndex
from ..index.segmented_graph import SegmentedGraph
from ..index.segmented_graph import verify as verify_graph
from ..index.verified_file import BAD, set_aside, skipped
from ..index.viewed_graph import ViewedGraph
from .dense_tail import TAIL_EVERY, read_tail, write_tail

# Up to this many documents, a search that must rank all of them (or a filtered few) is exact.
EXHAUSTIVE_LIMIT = 20_000
# A reader masks at most this many of a viewed graph's labels (deleted since its save), each search
# fetching that many more hits; past it, the reader reads the graph in and removes them.
MASK_LIMIT = 1_000


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
    """The collection's vector index, exact or HNSW, saved in the folder under a name that carries
    the watermark it covers, and caught up from the store on open. A saved exact matrix is mapped
    (`MappedExactIndex`): a reader does not read every vector back from the store. A saved HNSW
    index (graphs of bounded size, `SegmentedGraph`) is opened as read-only memory-mapped views; a
    writer copies a segment into memory only when it changes one (adds go to the newest). A reader
    (`follow`) keeps the views and puts what changed since the save beside them (`ViewedGraph`),
    moving to the writer's next save when there is one; so a reader opens and catches up in time
    that grows with the changes, not with the collection.

    Each file is verified before use (`index/verified_file.py`: its checksum, that it is this
    collection's (`owner`, the store's `collection_id`) and covers the watermark its name says,
    and that the store has reached that watermark); one that fails is set aside with a warning and
    the index rebuilt from the store."""

    FILE = re.compile(r"dense-(\d+)-(\d+)\.(hnsw|exact)")

    def __init__(
        self,
        kind: str,
        dim: int,
        metric: str,
        model: str,
        hnsw: dict[str, Any],
        follow: bool = False,
        owner: str = "",
    ) -> None:
        if kind not in ("exact", "hnsw"):
            raise ValueError(f"unknown index kind {kind!r}; choose exact or hnsw")
        self.kind, self.dim, self.metric, self.model, self.hnsw = kind, dim, metric, model, hnsw
        self.follow, self.owner = follow, owner
        self.index: Any = None
        self.watermark = Watermark()
        self.saved = Watermark()
        self.tail_label = 0  # the store label the newest tail file reaches (`dense_tail.py`)
        self._viewed: Path | None = None  # a reader's: the graph file its ViewedGraph maps
        self.folder: Path | None = None  # where its files are (`load`)

    @property
    def persistent(self) -> bool:
        """Both kinds are saved beside the store (`_maybe_save`, `close`)."""
        return True

    @property
    def suffix(self) -> str:
        return "hnsw" if self.kind == "hnsw" else "exact"

    def _new(self) -> Any:
        if self.kind == "exact":
            return ExactIndex(self.dim, self.metric)
        return SegmentedGraph(self.dim, self.metric, **self.hnsw)

    def load(self, folder: Path, store: Store) -> None:
        """The newest saved file of this kind whose name carries its watermark, verified, else an
        empty index (rebuilt from the store by `sync`). A file removed while being opened (the writer
        saved a newer one) sends it back to the list; a damaged one, or one ahead of the store
        (restored from an older copy), is set aside."""
        self.index = self._new()
        self.watermark = self.saved = Watermark()
        self.tail_label = 0
        self._viewed, self.folder = None, folder
        for _ in range(3):
            for path in self._saved_files(folder):
                try:
                    self._open(path, store)
                except FileNotFoundError:
                    break
                except ValueError as e:  # damaged, another collection's, or ahead of the store
                    set_aside(path, e)
                    continue
                except OSError as e:  # unreadable now (permissions, no descriptors left): not damaged
                    skipped(path, e)
                    continue
                self.watermark = self.saved = self._mark(path)
                self._map_tail(path)
                return
            else:
                return

    def _open(self, path: Path, store: Store) -> None:
        """Open index file `path` verified: its checksums, its owner and (for a matrix) its
        watermark, checked before anything is mapped or handed to usearch; then that the store
        has reached its watermark (read after the file was found: a writer commits before it saves)."""
        mark = self._mark(path)
        if self.kind == "exact":
            expect = {"collection": self.owner, "watermark": [mark.label, mark.deletion]}
            index: Any = MappedExactIndex.load(path, self.dim, self.metric, expect)
        else:
            options = {k: v for k, v in self.hnsw.items() if k in ("segment_size", "threads")}
            watermark = [mark.label, mark.deletion]
            expect = {"collection": self.owner}
            index = SegmentedGraph.load(path, view=True, expect=expect, watermark=watermark, **options)
        now = store.watermark()
        if mark.label > now.label or mark.deletion > now.deletion:
            raise ValueError(f"{path}: covers more than its store holds ({now.label}, {now.deletion})")
        if self.kind == "exact":
            self.index = index
            return
        self.index = ViewedGraph(index) if self.follow else index
        self._viewed = path if self.follow else None

    def _map_tail(self, path: Path) -> None:
        """Take the saved tail of index file `path` in place of reading those vectors from the
        store: the watermark moves to the tail's label (deletions still replay from the file's).
        A writer of an HNSW collection reads the graph in at its first change and replays from the
        graph's own watermark, so it takes none."""
        if self.kind == "hnsw" and not self.follow:
            return
        tail = read_tail(path, self.dim, self.metric, self.owner)
        if tail is None or tail[0] <= self.saved.label:
            return
        label, rows = tail
        if self.kind == "hnsw":
            self.index = ViewedGraph(self.index.graph, tail=rows)
        else:
            self.index.tail = rows
        self.watermark = Watermark(label, self.saved.deletion)
        self.tail_label = label

    def _saved_files(self, folder: Path) -> list[Path]:
        """This kind's saved index files, newest watermark first."""
        files = [
            p for p in folder.iterdir() if (m := self.FILE.fullmatch(p.name)) and m.group(3) == self.suffix
        ]
        return sorted(files, key=lambda p: self._order(self._mark(p)), reverse=True)

    @staticmethod
    def _order(mark: Watermark) -> tuple[int, int]:
        return mark.label, mark.deletion

    def _mark(self, path: Path) -> Watermark:
        match = self.FILE.fullmatch(path.name)
        assert match is not None
        return Watermark(int(match.group(1)), int(match.group(2)))

    def sync(self, store: Store) -> bool:
        """Apply what the store changed since the watermark; True if anything was applied."""
        if self.index is None:
            self.index = self._new()
        now = store.watermark()
        if now == self.watermark:
            return False
        if self._viewed is not None:  # a reader beside the saved graph
            self._follow_saves(self._viewed.parent, store)
            if now == self.watermark:
                return False
            if self._too_far(now):  # edit the graph itself, copying in the segments that change
                self.index, self._viewed, self.watermark = self.index.graph, None, self.saved
        self.watermark = replay(
            store, self.index, self.watermark, lambda after: store.vectors_after(self.model, self.dim, after)
        )
        return True

    def _follow_saves(self, folder: Path, store: Store) -> None:
        """Map the writer's newest saved graph when it is newer than the one viewed."""

        newest = next(iter(self._saved_files(folder)), None)
        if (
            newest is not None
            and newest != self._viewed
            and self._order(self._mark(newest)) > self._order(self.saved)
        ):
            self.load(folder, store)

    def _too_far(self, now: Watermark) -> bool:
        """Whether the store has moved so far past the viewed graph that reading it into memory and
        inserting the changes beats searching beside it: many masked labels make every graph search
        fetch that many more hits, and a tail past a fifth of the graph makes every search scan it.
        (A writer saves a new graph once the changes reach a tenth of the collection.)"""
        added, deleted = now.label - self.saved.label, now.deletion - self.saved.deletion
        return deleted > MASK_LIMIT or added > max(EXHAUSTIVE_LIMIT, len(self.index) // 5)

    def retrieve(self, store: Store, queries: Queries, k: int, filter: Filter | None) -> TopK:
        """Caught up, the top-k per query vector among the labels `filter` allows (nothing is
        encoded when none is allowed or nothing is stored)."""
        self.sync(store)
        allowed = None if filter is None else filter.allowed
        if (allowed is not None and len(allowed) == 0) or not self.index:
            return queries.none()
        return ranked_rows(*self.search(store, queries.encoded, k, allowed))

    def stored(self, store: Store, labels: Sequence[int]) -> list[Any]:
        return list(store.vectors_of(self.model, self.dim, np.asarray(labels, dtype=np.int64)))

    def problems(self, store: Store, labels: np.ndarray) -> list[str]:
        """The index's labels against the store's, and every saved file verified (each damaged
        one named; those set aside are no longer used, so no longer a problem)."""
        self.sync(store)
        return label_problems("dense index", self.index.ids(), labels) + self.file_problems()

    def file_problems(self) -> list[str]:
        """One line per saved dense file that fails verification."""
        if self.folder is None:
            return []
        expect = {"collection": self.owner}
        lines = []
        for path in sorted(self.folder.glob("dense-*")):
            if BAD in path.name or ".hnsw.seg-" in path.name or path.name.endswith(".manifest"):
                continue  # a graph's segments and manifest are verified with its segment 0
            if path.name.endswith(".hnsw"):
                lines += [f"dense index file {why}" for why in verify_graph(path, expect)]
            elif (why := verify_arrays(path, expect)) is not None:
                lines.append(f"dense index file {why}")
        return lines

    def apart(self) -> None:
        """Held in this process: it never searches apart."""
        return None

    def search(
        self, store: Store, vectors: np.ndarray, k: int, allowed: np.ndarray | None, where: Any = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (labels, scores) per query vector, among `allowed` labels when given (`where`, the
        SQL form of the same filter, is for the PostgreSQL index and unused here)."""
        index = self.index
        if allowed is None and self.kind == "hnsw" and k >= len(index) <= EXHAUSTIVE_LIMIT:
            # Asked to rank everything: a graph walk may not reach every node, an exact pass does.
            return self._exact_subset(store, vectors, k, index.ids())
        if allowed is None:
            return cast(tuple[np.ndarray, np.ndarray], index.search(vectors, k))
        if self.kind == "exact":
            return cast(tuple[np.ndarray, np.ndarray], index.search(vectors, k, allowed=allowed))
        return self._filtered_ann(store, vectors, k, allowed)

    def _filtered_ann(
        self, store: Store, vectors: np.ndarray, k: int, allowed: np.ndarray
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
        self, store: Store, vectors: np.ndarray, k: int, allowed: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        subset = ExactIndex(self.dim, self.metric)
        subset.add(allowed, store.vectors_of(self.model, self.dim, allowed))
        return subset.search(vectors, k)

    def tail_due(self) -> bool:
        """Whether `TAIL_EVERY` passages were added since the last index or tail file."""
        return self.watermark.label - max(self.saved.label, self.tail_label) >= TAIL_EVERY

    def save_tail(self, folder: Path) -> None:
        """Write what was added since the saved index file as its tail (`dense_tail.py`): nothing
        before a first save, or while the index is still the saved file, unchanged."""
        index_file = folder / f"dense-{self.saved.label}-{self.saved.deletion}.{self.suffix}"
        if self.follow or not index_file.exists():
            return
        if isinstance(self.index, MappedExactIndex):
            labels, vectors = self.index.tail.ids(), self.index.tail.vectors()
        else:  # the writer's graph in memory
            labels = self.index.ids()
            labels = labels[labels > self.saved.label]
            vectors = self.index.get_vectors(labels)
            vectors = _normalized(vectors) if self.metric == "cosine" else vectors
        write_tail(index_file, self.watermark.label, labels, vectors, self.metric, self.owner)
        self.tail_label = self.watermark.label

    def save(self, folder: Path) -> None:
        """Write the index (the HNSW graph, or the exact matrix) under a name that records its
        watermark, then drop older files.

        The save itself is atomic (temporary file, then rename), so a crash leaves either the old
        file or the new one, and whichever is found is caught up from the store on open."""
        if self.index is None or self.saved == self.watermark:
            return
        mark = self.watermark
        # A save killed midway leaves a hidden temporary sibling; the caller holds the writer lock,
        # so no other save is running and any such file is stale.
        for stale in folder.glob(".dense-*.tmp*"):
            stale.unlink(missing_ok=True)
        for segment in (*folder.glob("dense-*.seg-*"), *folder.glob("dense-*.manifest")):
            graph = folder / segment.name.split(".seg-")[0].removesuffix(".manifest")
            if BAD not in segment.name and not graph.exists():  # a save killed before its first segment
                segment.unlink(missing_ok=True)
        target = folder / f"dense-{mark.label}-{mark.deletion}.{self.suffix}"
        if self.kind == "hnsw":
            self.index.save(target, {"collection": self.owner}, watermark=[mark.label, mark.deletion])
        else:
            meta = {"collection": self.owner, "watermark": [mark.label, mark.deletion]}
            MappedExactIndex.save(self.index, target, meta)
            self.index = MappedExactIndex.load(target, self.dim, self.metric, meta)  # the writer maps it too
        self.saved = mark
        self.tail_label = mark.label
        for path in self._saved_files(folder):
            if path != target:
                for extra in (path, *path.parent.glob(path.name + ".*")):
                    if BAD not in extra.name and extra.exists():
                        os.unlink(extra)


def label_problems(what: str, held: np.ndarray, labels: np.ndarray) -> list[str]:
    """One problem line when an index's labels (`held`) differ from the stored passages' `labels`."""
    held = np.sort(held)
    if np.array_equal(held, labels):
        return []
    missing, extra = np.setdiff1d(labels, held), np.setdiff1d(held, labels)
    return [f"{what}: {len(missing)} documents missing, {len(extra)} deleted ones left"]
