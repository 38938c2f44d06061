"""An HNSW index kept as several graphs of bounded size, searched together (Lucene's segments).

Inserting into one HNSW graph costs more as the graph outgrows the processor's caches: each insert
walks the graph, and its nodes are farther apart in memory the larger it is. So a collection that
grows to a million passages adds its last ones several times slower than its first. Here new
vectors go to the newest graph until it holds `segment_size`, then a new one starts; a search asks
every graph for its best k and merges them (more graphs, a little more search; never a full graph
walk of everything). A saved segment that has not changed since is not written again: the next save
links its file under the new name, so a save writes what changed, not what the collection holds.

A segment read from a file is a read-only memory-mapped view until something changes in it; then it
is copied into memory (from the mapping, so a file replaced meanwhile does not matter). A writer
that only adds so copies in the newest segment alone.

One query searches its segments on a shared pool of threads, one per core (usearch releases the
interpreter lock while it walks a graph), so a query's latency grows with the segments divided by
the cores. A batch of queries searches segment by segment: usearch spreads a batch over the cores.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..._util.atomic import atomic_write, fsync_folder
from ..._util.cores import usable_cores
from .ann import HNSWIndex, as_ids, as_vectors
from .exact import merge_hits

# Vectors per graph. Measured on 64-d vectors (usearch, M=16, ef_construction=128): inserting the
# second 100,000 costs twice the first, the sixth three times; 2**17 keeps inserts near the cheap
# end while a million passages need 8 graph searches per query.
SEGMENT_SIZE = 131_072

_pool: ThreadPoolExecutor | None = None  # searches the segments of one query side by side


def _searches() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(usable_cores(), thread_name_prefix="munjang-segments")
    return _pool


def _forget_pool() -> None:
    """A forked child has the pool object but not its threads: it starts its own."""
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool)


def segment_file(path: Path, number: int) -> Path:
    """Where segment `number` of the graph saved at `path` lives (segment 0 is `path` itself)."""
    return path if number == 0 else path.with_name(f"{path.name}.seg-{number}")


class SegmentedGraph:
    """The add / remove / search / ids contract of `HNSWIndex` over graphs of at most `segment_size`
    vectors each; the other keywords are `HNSWIndex`'s (connectivity, expansion, dtype, threads)."""

    def __init__(
        self, dim: int, metric: str = "cosine", segment_size: int = SEGMENT_SIZE, **hnsw: Any
    ) -> None:
        if isinstance(segment_size, bool) or not isinstance(segment_size, int) or segment_size < 1:
            raise ValueError(f"segment_size must be a positive integer, not {segment_size!r}")
        self.dim, self.metric, self.segment_size, self.hnsw = dim, metric, segment_size, hnsw
        self.segments: list[HNSWIndex] = [self._new()]
        self._files: list[Path | None] = [None]  # the saved file holding each segment as it is now

    def _new(self) -> HNSWIndex:
        return HNSWIndex(self.dim, metric=self.metric, **self.hnsw)

    def __len__(self) -> int:
        return sum(len(s) for s in self.segments)

    def __contains__(self, label: object) -> bool:
        return any(label in s for s in self.segments)

    @property
    def is_view(self) -> bool:
        """True while every segment is still the read-only view of its file."""
        return all(s.is_view for s in self.segments)

    def contains(self, ids: Any) -> np.ndarray:
        """One bool per id: whether some segment holds it."""
        keys = as_ids(ids, unique=False)
        found = np.zeros(keys.size, dtype=bool)
        for segment in self.segments:
            found |= segment.contains(keys)
        return found

    def ids(self) -> np.ndarray:
        """All labels held, ascending."""
        return np.sort(np.concatenate([s.ids() for s in self.segments]))

    def memory_bytes(self) -> int:
        """Bytes usearch holds for all segments (a view: its bookkeeping only)."""
        return sum(s.memory_bytes() for s in self.segments)

    def _editable(self, number: int) -> HNSWIndex:
        """Segment `number`, copied into memory first if it is a view."""
        segment = self.segments[number]
        if segment.is_view:
            segment = self.segments[number] = segment.copy()
        self._files[number] = None  # about to change: its file no longer holds it
        return segment

    def add(self, ids: Any, vectors: Any) -> None:
        """Add labelled vectors to the newest segment, starting new ones as each fills; a label
        already held anywhere is replaced."""
        keys = as_ids(ids)
        arr = as_vectors(vectors, self.dim, "vectors")
        if arr.shape[0] != keys.size:
            raise ValueError(f"got {keys.size} ids but {arr.shape[0]} vectors")
        self.remove(keys)
        start = 0
        while start < keys.size:
            if len(self.segments[-1]) >= self.segment_size:
                self.segments.append(self._new())
                self._files.append(None)
            segment = self._editable(len(self.segments) - 1)
            end = start + self.segment_size - len(segment)
            segment.add(keys[start:end], arr[start:end])
            start = end

    def remove(self, ids: Any) -> int:
        """Remove labels (absent ones are ignored), copying in only the segments that hold some."""
        keys = np.unique(as_ids(ids, unique=False))
        removed = 0
        for number, segment in enumerate(self.segments):
            held = keys[segment.contains(keys)] if keys.size else keys
            if held.size:
                removed += self._editable(number).remove(held)
        return removed

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(labels (q, k) int64 padded with -1, scores (q, k) float32), best first: each segment's
        best k, merged (equal scores lower label first). One query's segments are searched side by
        side on the shared pool; a batch's one after another, each spread over the cores by usearch."""
        live = [s for s in self.segments if len(s)]
        if len(live) <= 1:
            return (live or self.segments)[0].search(queries, k)
        if np.ndim(queries) == 1 or len(queries) == 1:
            parts = list(_searches().map(lambda segment: segment.search(queries, k), live))
        else:
            parts = [segment.search(queries, k) for segment in live]
        return merge_hits(parts, k)

    def get_vectors(self, ids: Any) -> np.ndarray:
        """The held vectors of `ids` (float32 (n, dim), at the stored precision); ValueError if absent."""
        keys = as_ids(ids, unique=False)
        out = np.zeros((keys.size, self.dim), dtype=np.float32)
        found = np.zeros(keys.size, dtype=bool)
        for segment in self.segments:
            here = segment.contains(keys) & ~found
            if here.any():
                out[here] = segment.get_vectors(keys[here])
                found |= here
        if not found.all():
            raise ValueError(f"id {int(keys[~found][0])} is not in the index")
        return out

    def save(self, path: str | os.PathLike[str], meta: Mapping[str, Any] | None = None) -> None:
        """Write the segments to `path` and `path.seg-N`: a segment unchanged since its last save is
        linked (copied where links are not possible), not written. Segment 0, which names the set,
        is written last, so a reader that finds it finds all the others."""
        path = Path(path)
        for stale in path.parent.glob(f"{path.name}.seg-*"):
            stale.unlink()
        linked = False
        for number in reversed(range(len(self.segments))):
            target, source = segment_file(path, number), self._files[number]
            if source == target:
                continue
            if source is not None and source.exists():
                atomic_write(target, partial(_link, source))
                linked = True
            else:
                self.segments[number].save(target, meta)
            self._files[number] = target
        if linked:
            fsync_folder(path.parent)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        view: bool = False,
        segment_size: int = SEGMENT_SIZE,
        threads: int = 0,
        expect: Mapping[str, Any] | None = None,
    ) -> SegmentedGraph:
        """The graph saved at `path`, its segments read in or (`view`) mapped, each verified first
        (`HNSWIndex.load`, `expect`: values each segment's meta must hold). FileNotFoundError when
        `path` is removed meanwhile (a writer saved a newer graph): its segment list may be short."""
        path = Path(path)
        segments = [HNSWIndex.load(path, view=view, threads=threads, expect=expect)]
        while (file := segment_file(path, len(segments))).exists():
            segments.append(HNSWIndex.load(file, view=view, threads=threads, expect=expect))
        if not path.exists():
            raise FileNotFoundError(f"{path} was replaced while it was being opened")
        config = segments[0].get_config_dict()
        dim, metric = config.pop("dim"), config.pop("metric")
        graph = cls(dim, metric, segment_size, threads=threads, **config)
        graph.segments = segments
        graph._files = [segment_file(path, n) for n in range(len(segments))]
        return graph


def _link(source: Path, target: Path) -> None:
    """`target` as another name of `source`'s file, or a copy of it where links are refused."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
