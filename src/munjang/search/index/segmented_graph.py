"""An HNSW index kept as several graphs of bounded size, searched together (Lucene's segments).

Inserting into one HNSW graph costs more as the graph outgrows the processor's caches: each insert
walks the graph, and its nodes are farther apart in memory the larger it is. So a collection that
grows to a million passages adds its last ones several times slower than its first. Here new
vectors go to the newest graph until it holds `segment_size`, then a new one starts; a search asks
every graph for its best k and merges them (more graphs, a little more search; never a full graph
walk of everything). A saved segment that has not changed since is not written again: the next save
links its file under the new name, so a save writes what changed, not what the collection holds.

A saved graph is a set of files, so a manifest (`<path>.manifest`, a verified array file) names
them: each segment's file name, vector count, first and last label, size and digest (the xxh3-64
its footer carries), and the store watermark the set covers. It is written after every other
segment and before segment 0, the file whose name readers list, so a reader that finds segment 0
finds the manifest. Opening checks the set against it before usearch reads a byte: a segment
missing (deleted from the middle), extra, swapped or replaced is refused as damaged
(`DamagedIndexFile`: the collection sets the set aside and rebuilds from the store), at the cost
of a folder listing and one small file, whatever the collection's size (the digests compared are
the ones each segment's own verification computes anyway). Label ranges are checked by `verify`
(`index info --check`), which reads every segment's labels.

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
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..._util.atomic import atomic_write, fsync_folder
from ..._util.cores import usable_cores
from .ann import HNSWIndex, as_ids, as_vectors, stored_footer, verify_index_file
from .array_file import read_arrays, write_arrays
from .exact import merge_hits
from .verified_file import BAD, DamagedIndexFile, UnverifiedFile

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


def manifest_file(path: Path) -> Path:
    """Where the manifest of the graph saved at `path` lives."""
    return path.with_name(f"{path.name}.manifest")


MANIFEST_FORMAT = "munjang-hnsw-segments"
MANIFEST_VERSION = 1


class SegmentManifestError(DamagedIndexFile):
    """A saved graph's files disagree with its manifest: a segment missing, extra, swapped or replaced."""


class UnlistedSegments(SegmentManifestError, UnverifiedFile):
    """A graph saved without a manifest (by an older munjang): its set of segments cannot be verified."""


def read_manifest(
    path: Path, expect: Mapping[str, Any] | None = None, watermark: Sequence[int] | None = None
) -> dict[str, Any]:
    """The manifest of the graph saved at `path`, verified (its checksums, `expect`'s meta, the
    `watermark` it covers), with the listing it is checked against: `names`, `digests`, `counts`,
    `first`, `last`. FileNotFoundError when segment 0 is gone too (a writer replaced the graph)."""
    manifest = manifest_file(path)
    want = {**(expect or {}), "format": MANIFEST_FORMAT, "version": MANIFEST_VERSION}
    if watermark is not None:
        want["watermark"] = list(watermark)
    try:
        meta, arrays = read_arrays(manifest, want)
    except FileNotFoundError:
        if not path.exists():
            raise
        if stored_footer(path).get("meta", {}).get("segmented"):
            raise SegmentManifestError(f"{manifest}: missing (the graph's segments are unknown)") from None
        raise UnlistedSegments(f"{path}: written without a segment manifest (by an older munjang)") from None
    names, digests = meta.get("names"), meta.get("digests")
    counts = arrays.get("count")
    if (
        not isinstance(names, list)
        or not isinstance(digests, list)
        or counts is None
        or not len(names) == len(digests) == len(counts) >= 1
        or names != [segment_file(path, n).name for n in range(len(names))]
    ):
        raise SegmentManifestError(f"{manifest}: does not list the segments of {path.name}")
    return {"names": names, "digests": digests, **arrays}


def _listed_files(path: Path, names: Sequence[str]) -> list[Path]:
    """The segment files of the graph at `path` its manifest lists, after checking the folder holds
    those and no others (a folder listing: no file is read)."""
    held = {p.name for p in path.parent.glob(f"{path.name}.seg-*") if BAD not in p.name}
    extra = sorted(held - set(names[1:]))
    missing = [name for name in names if name not in held and name != path.name]
    if not path.exists():
        raise FileNotFoundError(f"{path} was replaced while it was being opened")
    if missing:
        raise SegmentManifestError(f"{path}: segment {missing[0]} named in its manifest is missing")
    if extra:
        raise SegmentManifestError(f"{path}: segment file {extra[0]} is not in its manifest")
    return [path.with_name(name) for name in names]


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

    def save(
        self,
        path: str | os.PathLike[str],
        meta: Mapping[str, Any] | None = None,
        watermark: Sequence[int] | None = None,
    ) -> None:
        """Write the segments to `path.seg-N` and `path`, and their manifest (`meta`, and the store
        `watermark` the set covers): a segment unchanged since its last save is linked (copied where
        links are not possible), not written. Segment 0, whose name readers list, goes to a hidden
        name first and takes its own last, after the manifest naming it."""
        path = Path(path)
        for stale in (*path.parent.glob(f"{path.name}.seg-*"), manifest_file(path)):
            if BAD not in stale.name and stale not in self._files:
                stale.unlink(missing_ok=True)
        meta = {**(meta or {}), "segmented": True}
        first = path.with_name(f".{path.name}.tmp-first")
        files: list[Path] = []
        linked = False
        try:
            for number in reversed(range(len(self.segments))):
                target, source = segment_file(path, number), self._files[number]
                written = first if number == 0 else target
                if source == target:
                    written = target
                elif source is not None and source.exists():
                    if number == 0:
                        first.unlink(missing_ok=True)
                        _link(source, first)
                    else:
                        atomic_write(target, partial(_link, source))
                    linked = True
                else:
                    self.segments[number].save(written, meta)
                files.insert(0, written)
            if linked:
                fsync_folder(path.parent)
            self._write_manifest(path, files, meta, watermark)
            if files[0] == first:
                os.replace(first, path)
                fsync_folder(path.parent)
        finally:
            first.unlink(missing_ok=True)
        self._files = [segment_file(path, n) for n in range(len(self.segments))]

    def _write_manifest(
        self, path: Path, files: Sequence[Path], meta: Mapping[str, Any], watermark: Sequence[int] | None
    ) -> None:
        """The manifest of the segments just saved as `files` (segment 0 under its hidden name)."""
        labels = [s.ids() for s in self.segments]
        arrays = {
            "count": np.array([len(ids) for ids in labels], dtype=np.int64),
            "first": np.array([ids.min() if len(ids) else -1 for ids in labels], dtype=np.int64),
            "last": np.array([ids.max() if len(ids) else -1 for ids in labels], dtype=np.int64),
            "bytes": np.array([f.stat().st_size for f in files], dtype=np.int64),
        }
        listing = {
            "format": MANIFEST_FORMAT,
            "version": MANIFEST_VERSION,
            "names": [segment_file(path, n).name for n in range(len(files))],
            "digests": [stored_footer(f).get("xxh3") for f in files],
        }
        if watermark is not None:
            listing["watermark"] = list(watermark)
        write_arrays(manifest_file(path), arrays, {**meta, **listing})

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        view: bool = False,
        segment_size: int = SEGMENT_SIZE,
        threads: int = 0,
        expect: Mapping[str, Any] | None = None,
        watermark: Sequence[int] | None = None,
    ) -> SegmentedGraph:
        """The graph saved at `path`, its segments read in or (`view`) mapped, each verified first:
        the set against its manifest (`read_manifest`: `expect`'s, covering `watermark`), then each
        file (`HNSWIndex.load`: its checksum, the digest its manifest recorded, `expect`'s meta).
        FileNotFoundError when `path` is removed meanwhile (a writer saved a newer graph)."""
        path = Path(path)
        listing = read_manifest(path, expect, watermark)
        files = _listed_files(path, listing["names"])
        try:
            segments = [
                HNSWIndex.load(file, view=view, threads=threads, expect=expect, digest=digest)
                for file, digest in zip(files, listing["digests"], strict=True)
            ]
        except FileNotFoundError:
            if path.exists():
                raise SegmentManifestError(f"{path}: a segment named in its manifest is missing") from None
            raise
        if not path.exists():
            raise FileNotFoundError(f"{path} was replaced while it was being opened")
        config = segments[0].get_config_dict()
        dim, metric = config.pop("dim"), config.pop("metric")
        graph = cls(dim, metric, segment_size, threads=threads, **config)
        graph.segments = segments
        graph._files = list[Path | None](files)
        return graph


def verify(path: Path, expect: Mapping[str, Any] | None = None) -> list[str]:
    """Why the graph saved at `path` cannot be used, one line per problem (none: its set of
    segments is the one its manifest lists, each file whole and `expect`'s, holding the labels
    its manifest says; or it was written by an older munjang, never used). Segments are mapped
    (usearch reads them) only once their checksums hold."""
    try:
        listing = read_manifest(path, expect)
        files = _listed_files(path, listing["names"])
    except UnverifiedFile:
        return []
    except (OSError, DamagedIndexFile) as e:
        return [str(e)]
    problems = []
    for n, (file, digest) in enumerate(zip(files, listing["digests"], strict=True)):
        why = verify_index_file(file, expect, digest)
        if why is not None:
            problems.append(why)
            continue
        ids = HNSWIndex.load(file, view=True, expect=expect, digest=digest).ids()
        held = (len(ids), ids.min() if len(ids) else -1, ids.max() if len(ids) else -1)
        if held != (listing["count"][n], listing["first"][n], listing["last"][n]):
            problems.append(f"{file}: holds labels its manifest does not list")
    return problems


def _link(source: Path, target: Path) -> None:
    """`target` as another name of `source`'s file, or a copy of it where links are refused."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
