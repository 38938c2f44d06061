"""Approximate nearest-neighbour search: an HNSW graph index (usearch) with incremental add, delete and
atomic save/load.

`HNSWIndex` is the ANN index of a persistent collection: ids are caller-chosen non-negative int64, scores
are "larger = more similar" for every metric (cosine similarity, dot product, negative L2 distance), so
callers can merge or threshold them like exact search results.

usearch was chosen over faiss-cpu and hnswlib by measurement (bench/ann_choice.py, N=100k, d=384): the
same recall at the same graph settings, and it is the only one of the three with delete, incremental add
without a fixed capacity, 64-bit ids, save/load and a memory-mapped view all at once (faiss's HNSW cannot
delete; hnswlib has a fixed capacity, soft delete only, no memory-mapped load). Its f32 distance kernels
are slower than the other two on the benchmark CPU, both to build and to search; storing "f16" halves the
vector memory and closes most of that gap with unchanged recall@10 (figures in docs/benchmarks.md).

File format: the usearch index bytes, then a JSON footer (format, version, configuration, count, payload
size, the caller's `meta`, and the xxh3-64 digest of the payload and the rest of the footer), then 16
bytes (footer length as little-endian uint64, magic). One file, written to a temporary sibling and
renamed into place, so a crash mid-save leaves the previous file intact and the configuration can never
disagree with the graph it describes. The digest is checked on load before usearch sees a byte
(usearch trusts its file: a garbled graph can crash the process); a file without one (an older
munjang's) is refused as unverifiable, and so is anything but a regular file.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xxhash
from usearch.index import BatchMatches, Index, MetricKind, ScalarKind

from ..._util.atomic import atomic_write
from ...errors import MunjangError
from .verified_file import DamagedIndexFile, UnverifiedFile, mapped, opened

__all__ = ["METRICS", "HNSWIndex", "IndexFileError"]

METRICS = ("cosine", "dot", "l2")
_USEARCH_METRICS = {"cosine": MetricKind.Cos, "dot": MetricKind.IP, "l2": MetricKind.L2sq}
# Only float storage: usearch's i8 scales by 127 without calibration, which wrecks normalized embeddings.
_USEARCH_DTYPES = {"f32": ScalarKind.F32, "f16": ScalarKind.F16, "bf16": ScalarKind.BF16}

_FOOTER = struct.Struct("<Q8s")  # JSON footer length, magic
_MAGIC = b"MJIDX\x00v1"
_HNSW_FORMAT = "munjang-hnsw"
_FORMAT_VERSION = 1
_INT64_MAX = np.iinfo(np.int64).max


class IndexFileError(MunjangError, DamagedIndexFile):
    """An index file is not a munjang index, is truncated or corrupt, or disagrees with its configuration."""


class UnverifiedIndexFile(IndexFileError, UnverifiedFile):
    """An index file written without a checksum (by an older munjang)."""


# ---------------------------------------------------------------- input checks shared with quantization.py


def as_ids(ids: Any, *, unique: bool = True) -> np.ndarray:
    """`ids` as a 1-D int64 array; ValueError unless they are non-negative integers (and distinct)."""
    arr = np.asarray(ids)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"ids must be a 1-D sequence of integers, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"ids must be integers, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.unsignedinteger) and int(arr.max()) > _INT64_MAX:
        raise ValueError(f"ids must fit in int64, got {int(arr.max())}")
    arr = arr.astype(np.int64, copy=False)
    if (arr < 0).any():
        raise ValueError(f"ids must be non-negative, got {int(arr[arr < 0][0])}")
    if unique:
        values, counts = np.unique(arr, return_counts=True)
        if (counts > 1).any():
            raise ValueError(f"duplicate id {int(values[counts > 1][0])} in one call")
    return arr


def as_vectors(vectors: Any, dim: int, name: str = "vectors") -> np.ndarray:
    """`vectors` as a C-contiguous float32 (n, dim) array (1-D means one row); ValueError if unusable."""
    arr = np.asarray(vectors)
    if arr.dtype.kind not in "fiu":
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (n, {dim}) array or one 1-D vector, got shape {arr.shape}")
    if arr.shape[1] != dim:
        raise ValueError(f"{name} have {arr.shape[1]} dimensions, the index has {dim}")
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contain NaN or infinite values")
    return arr


def check_k(k: int) -> int:
    """`k` as an int, or ValueError when it is not a positive integer."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, not {k!r}")
    return int(k)


def check_threads(threads: int) -> int:
    """`threads` as an int (0 = all cores), or ValueError when negative."""
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 0:
        raise ValueError(f"threads must be a non-negative integer (0 = all cores), not {threads!r}")
    return int(threads)


def _positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, not {value!r}")
    return int(value)


# ---------------------------------------------------------------- atomic single-file container


def write_atomic(path: str | os.PathLike[str], write: Callable[[Path], None], footer: dict[str, Any]) -> None:
    """Write a file with `write(tmp)` plus a JSON footer to a temporary sibling, then rename it to `path`.

    The footer records the payload size, so a truncated or foreign file is recognised on load, and
    the xxh3-64 digest of the payload and the footer, so a garbled one is.
    """
    path = Path(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot save to {path}: folder {path.parent} does not exist")

    def with_footer(tmp: Path) -> None:
        write(tmp)
        rest = {**footer, "payload_bytes": tmp.stat().st_size}
        digest = xxhash.xxh3_64()
        with open(tmp, "rb") as f:
            while block := f.read(1 << 24):
                digest.update(block)
        digest.update(json.dumps(rest).encode("utf-8"))
        data = json.dumps({**rest, "xxh3": digest.hexdigest()}).encode("utf-8")
        with open(tmp, "ab") as f:
            f.write(data)
            f.write(_FOOTER.pack(len(data), _MAGIC))

    atomic_write(path, with_footer, fsync=True)


def read_footer(
    path: str | os.PathLike[str],
    fmt: str,
    expect: Mapping[str, Any] | None = None,
    digest: str | None = None,
) -> dict[str, Any]:
    """The JSON footer of a file written by `write_atomic`, its digest verified over the whole file;
    FileNotFoundError or IndexFileError. `expect`: values the footer's `meta` must hold (a file
    without a digest, an older munjang's, is then refused; without `expect` it loads as it did).
    `digest`: the digest a manifest recorded for this file (another file under its name is refused)."""
    path = Path(path)
    try:
        with opened(path) as fd:
            whole = mapped(fd)
    except FileNotFoundError:
        raise FileNotFoundError(f"index file {path} does not exist") from None
    except DamagedIndexFile as e:
        raise IndexFileError(str(e)) from None
    size = 0 if whole is None else len(whole)
    if whole is None or size < _FOOTER.size:
        raise IndexFileError(f"{path} is not a munjang index file (only {size} bytes)")
    length, magic = _FOOTER.unpack(whole[size - _FOOTER.size :])
    if magic != _MAGIC or length > size - _FOOTER.size:
        raise IndexFileError(f"{path} is not a munjang index file, or it is truncated (no footer)")
    raw = whole[size - _FOOTER.size - length : size - _FOOTER.size]
    try:
        footer = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IndexFileError(f"{path}: the index footer is corrupt ({e})") from e
    if not isinstance(footer, dict) or footer.get("format") != fmt:
        found = footer.get("format") if isinstance(footer, dict) else None
        raise IndexFileError(f"{path} holds a {found!r} index, expected {fmt!r}")
    if footer.get("version") != _FORMAT_VERSION:
        raise IndexFileError(f"{path}: unsupported {fmt} format version {footer.get('version')!r}")
    payload = size - _FOOTER.size - length
    if footer.get("payload_bytes") != payload:
        raise IndexFileError(f"{path} is truncated or corrupt: its size does not match its footer")
    if "xxh3" in footer:
        rest = {key: value for key, value in footer.items() if key != "xxh3"}
        hashed = xxhash.xxh3_64(memoryview(whole)[:payload])
        hashed.update(json.dumps(rest).encode("utf-8"))
        if hashed.hexdigest() != footer["xxh3"]:
            raise IndexFileError(f"{path}: checksum mismatch (the file is garbled)")
    elif expect is not None:  # a collection's file must be verified; a standalone one loads as before
        raise UnverifiedIndexFile(f"{path}: written without a checksum (by an older munjang)")
    if digest is not None and footer.get("xxh3") != digest:
        raise IndexFileError(f"{path}: not the segment its manifest names (replaced or swapped)")
    if not isinstance(footer.get("config"), dict):
        raise IndexFileError(f"{path}: the index footer has no configuration")
    meta = footer["meta"] if isinstance(footer.get("meta"), dict) else {}
    for key, want in (expect or {}).items():
        if meta.get(key) != want:
            raise IndexFileError(f"{path}: written for {key} {meta.get(key)!r}, not {want!r}")
    return footer


def stored_footer(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON footer of an index file as it reads, unverified (its digest and meta, for a
    manifest naming the file): only the file's end is read. IndexFileError when it has none."""
    with opened(Path(path)) as fd:
        size = os.fstat(fd).st_size
        if size < _FOOTER.size:
            raise IndexFileError(f"{path} is not a munjang index file (only {size} bytes)")
        length, magic = _FOOTER.unpack(os.pread(fd, _FOOTER.size, size - _FOOTER.size))
        if magic != _MAGIC or length > size - _FOOTER.size:
            raise IndexFileError(f"{path} is not a munjang index file, or it is truncated (no footer)")
        raw = os.pread(fd, length, size - _FOOTER.size - length)
    try:
        footer = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IndexFileError(f"{path}: the index footer is corrupt ({e})") from e
    if not isinstance(footer, dict):
        raise IndexFileError(f"{path}: the index footer is corrupt")
    return footer


def verify_index_file(
    path: str | os.PathLike[str], expect: Mapping[str, Any] | None = None, digest: str | None = None
) -> str | None:
    """Why the HNSW file at `path` is damaged (None: it is whole, and `expect`'s, and `digest`'s
    when given; or written by an older munjang, never used); usearch never reads it here."""
    try:
        read_footer(path, _HNSW_FORMAT, expect, digest)
    except UnverifiedFile:
        return None
    except (OSError, IndexFileError) as e:
        return str(e)
    return None


# ---------------------------------------------------------------- HNSW


class HNSWIndex:
    """HNSW graph over float vectors (usearch) with caller-chosen int64 ids, delete and atomic save/load.

    `connectivity` is HNSW's M (edges per node; the base layer keeps 2*M), `expansion_add` the candidate
    list size while building (ef_construction), `expansion_search` the one while searching (ef_search,
    raise it for recall at the cost of latency). `dtype` is the stored precision: "f32" (4 bytes per
    dimension), "f16" or "bf16" (2 bytes; f16 keeps more precision for unit vectors and is the better
    trade for normalized embeddings). Memory per vector is dim * bytes + the graph (about 2 * M * 4 bytes
    of base-layer links, plus upper layers and bookkeeping): about 1.7 KB saved for d=384 f32, M=16 (0.9
    KB f16); `memory_bytes()` also counts spare capacity. `threads` is used by batch add and search
    (0 = all cores).
    """

    def __init__(
        self,
        dim: int,
        metric: str = "cosine",
        connectivity: int = 16,
        expansion_add: int = 128,
        expansion_search: int = 64,
        dtype: str = "f32",
        threads: int = 0,
    ) -> None:
        self.dim = _positive_int("dim", dim)
        if metric not in _USEARCH_METRICS:
            raise ValueError(f"metric must be one of {', '.join(METRICS)}, not {metric!r}")
        if dtype not in _USEARCH_DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(_USEARCH_DTYPES)}, not {dtype!r}")
        self.metric = metric
        self.dtype = dtype
        self.connectivity = _positive_int("connectivity", connectivity, minimum=2)
        self.expansion_add = _positive_int("expansion_add", expansion_add)
        self._expansion_search = _positive_int("expansion_search", expansion_search)
        self.threads = check_threads(threads)
        self._view = False
        self._index = self._new_usearch_index()

    def _new_usearch_index(self) -> Index:
        return Index(
            ndim=self.dim,
            metric=_USEARCH_METRICS[self.metric],
            dtype=_USEARCH_DTYPES[self.dtype],
            connectivity=self.connectivity,
            expansion_add=self.expansion_add,
            expansion_search=self._expansion_search,
        )

    @property
    def expansion_search(self) -> int:
        """Candidate list size while searching (ef_search); settable."""
        return self._expansion_search

    @expansion_search.setter
    def expansion_search(self, value: int) -> None:
        self._expansion_search = _positive_int("expansion_search", value)
        self._index.expansion_search = self._expansion_search  # type: ignore[misc]

    @property
    def is_view(self) -> bool:
        """True when the index is a read-only memory-mapped view of a file (`load(path, view=True)`)."""
        return self._view

    def _check_writable(self) -> None:
        if self._view:
            raise ValueError("this index is a read-only memory-mapped view: load with view=False to edit")

    def _check_vectors(self, vectors: Any, name: str) -> np.ndarray:
        arr = as_vectors(vectors, self.dim, name)
        if self.metric == "cosine" and arr.shape[0]:
            zero = np.flatnonzero(~np.any(arr, axis=1))
            if zero.size:
                raise ValueError(f"{name} row {int(zero[0])} is all zeros: cosine similarity is undefined")
        return arr

    def add(self, ids: Any, vectors: Any) -> None:
        """Add vectors under `ids` (non-negative, distinct); an id already present gets the new vector."""
        self._check_writable()
        keys = as_ids(ids)
        arr = self._check_vectors(vectors, "vectors")
        if arr.shape[0] != keys.size:
            raise ValueError(f"got {keys.size} ids but {arr.shape[0]} vectors")
        if keys.size == 0:
            return
        keys_u = keys.astype(np.uint64)
        present = np.asarray(self._index.contains(keys_u), dtype=bool).reshape(-1)
        if present.any():
            self._index.remove(keys_u[present])
        self._index.add(keys_u, arr, threads=self.threads)

    def remove(self, ids: Any) -> int:
        """Delete `ids`; ids that are not in the index are ignored. Returns how many were removed."""
        self._check_writable()
        keys = np.unique(as_ids(ids, unique=False))
        if keys.size == 0:
            return 0
        removed = self._index.remove(keys.astype(np.uint64))
        return int(np.sum(removed))

    def search(self, queries: Any, k: int, expansion: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The `k` nearest ids per query, best first: (ids (q, k) int64, scores (q, k) float32).

        Scores are larger = more similar (cosine similarity, dot product, or negative L2 distance). Rows
        with fewer than `k` results are padded with id -1 and score -inf. A 1-D query gives q = 1.
        `expansion` overrides `expansion_search` for this call (it is raised to at least `k`); it is set
        on the shared usearch index for the call, so concurrent searches should not pass different values.
        """
        k = check_k(k)
        q = self._check_vectors(queries, "queries")
        ids = np.full((q.shape[0], k), -1, dtype=np.int64)
        scores = np.full((q.shape[0], k), -np.inf, dtype=np.float32)
        if q.shape[0] == 0 or len(self) == 0:
            return ids, scores
        ef = self._expansion_search if expansion is None else _positive_int("expansion", expansion)
        self._index.expansion_search = max(ef, k)  # type: ignore[misc]
        try:
            matches = self._index.search(q, k, threads=self.threads)
        finally:
            self._index.expansion_search = self._expansion_search  # type: ignore[misc]
        if isinstance(matches, BatchMatches):
            keys, distances, counts = matches.keys, matches.distances, np.asarray(matches.counts)
        else:  # one query: usearch returns its hits unpadded
            keys, distances = matches.keys[None, :], matches.distances[None, :]
            counts = np.array([len(matches.keys)])
        valid = np.arange(keys.shape[1])[None, :] < counts[:, None]
        width = min(k, keys.shape[1])
        valid = valid[:, :width]
        ids[:, :width] = np.where(valid, keys[:, :width].astype(np.int64), -1)
        distances = np.where(valid, distances[:, :width], 0.0).astype(np.float32)  # padding is NaN
        found = self._scores(distances)
        scores[:, :width] = np.where(valid, found, -np.inf)
        return ids, scores

    def _scores(self, distances: np.ndarray) -> np.ndarray:
        """usearch distances (1 - cos, 1 - dot, squared L2) as larger-is-better scores."""
        if self.metric == "l2":
            return -np.sqrt(np.maximum(distances, 0.0))
        return (1.0 - distances).astype(np.float32)

    def get_vectors(self, ids: Any) -> np.ndarray:
        """The stored vectors of `ids` as float32 (n, dim) (at the stored precision); ValueError if absent."""
        keys = as_ids(ids, unique=False)
        if keys.size == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        present = self.contains(keys)
        if not present.all():
            raise ValueError(f"id {int(keys[~present][0])} is not in the index")
        out = self._index.get(keys.astype(np.uint64), dtype="f32")
        return np.asarray(out, dtype=np.float32).reshape(keys.size, self.dim)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, id: object) -> bool:
        if isinstance(id, bool) or not isinstance(id, (int, np.integer)) or not 0 <= id <= _INT64_MAX:
            return False
        return bool(self._index.contains(int(id)))

    def contains(self, ids: Any) -> np.ndarray:
        """One bool per id in `ids`: whether the index holds it."""
        keys = as_ids(ids, unique=False)
        if keys.size == 0:
            return np.zeros(0, dtype=bool)
        return np.asarray(self._index.contains(keys.astype(np.uint64)), dtype=bool).reshape(-1)

    def ids(self) -> np.ndarray:
        """All ids in the index, ascending, as int64."""
        return np.sort(np.asarray(self._index.keys[:], dtype=np.int64))

    def memory_bytes(self) -> int:
        """Bytes usearch has allocated: vectors, graph and reserved capacity (for a view: bookkeeping only).

        Reserved capacity that was never written is not resident, so this can exceed the process's actual
        growth (docs/benchmarks.md, HNSW row, gives both for 100k vectors).
        """
        return int(self._index.memory_usage)

    def copy(self) -> HNSWIndex:
        """An editable in-memory copy (of a view too: it is copied from the mapping, not the file)."""
        other = HNSWIndex(**self.get_config_dict(), threads=self.threads)
        other._index = self._index.copy()
        other._index.expansion_add = self.expansion_add  # type: ignore[misc]
        other._index.expansion_search = self._expansion_search  # type: ignore[misc]
        return other

    def get_config_dict(self) -> dict[str, Any]:
        """The constructor arguments that define the index (threads excepted), as stored in saved files."""
        return {
            "dim": self.dim,
            "metric": self.metric,
            "connectivity": self.connectivity,
            "expansion_add": self.expansion_add,
            "expansion_search": self._expansion_search,
            "dtype": self.dtype,
        }

    def save(self, path: str | os.PathLike[str], meta: Mapping[str, Any] | None = None) -> None:
        """Write the index and its configuration to one file, atomically (temporary sibling, then
        rename); `meta` (JSON: whose index it is) is kept in the footer for `load(expect=...)`."""
        footer = {
            "format": _HNSW_FORMAT,
            "version": _FORMAT_VERSION,
            "config": self.get_config_dict(),
            "count": len(self),
            "meta": dict(meta or {}),
        }

        def write(tmp: Path) -> None:
            self._index.save(str(tmp))

        write_atomic(path, write, footer)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        view: bool = False,
        threads: int = 0,
        expect: Mapping[str, Any] | None = None,
        digest: str | None = None,
    ) -> HNSWIndex:
        """Load an index written by `save`; `view=True` memory-maps the file read-only instead of reading it.

        Raises FileNotFoundError for a missing file and IndexFileError (a ValueError) for one that is not a
        munjang HNSW index, is truncated or garbled (its checksum, verified before usearch reads it),
        disagrees with its stored configuration, whose `meta` lacks the values in `expect`, or whose
        digest is not `digest` (what a segment manifest recorded for it).
        """
        path = Path(path)
        footer = read_footer(path, _HNSW_FORMAT, expect, digest)
        config = footer["config"]
        try:
            index = cls(**config, threads=threads)
        except TypeError as e:
            raise IndexFileError(f"{path}: bad stored configuration {config} ({e})") from e
        meta = Index.metadata(str(path))
        expected = (index.dim, _USEARCH_METRICS[index.metric], _USEARCH_DTYPES[index.dtype])
        if not meta or (meta["dimensions"], meta["kind_metric"], meta["kind_scalar"]) != expected:
            raise IndexFileError(f"{path}: the usearch header does not match the stored configuration")
        try:
            if view:
                index._index.view(str(path))
            else:
                index._index.load(str(path))
        except (RuntimeError, ValueError) as e:
            raise IndexFileError(f"{path}: usearch could not read the index ({e})") from e
        index._view = bool(view)
        index._index.expansion_search = index._expansion_search  # type: ignore[misc]
        if len(index) != footer.get("count"):
            raise IndexFileError(f"{path}: holds {len(index)} vectors, its footer says {footer.get('count')}")
        return index

    def __repr__(self) -> str:
        view = ", view" if self._view else ""
        return (
            f"HNSWIndex(dim={self.dim}, metric={self.metric!r}, connectivity={self.connectivity}, "
            f"expansion_search={self._expansion_search}, dtype={self.dtype!r}, size={len(self)}{view})"
        )
