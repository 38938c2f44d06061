"""Indexes over quantized codes: binary (exact Hamming scan) and int8 (float query against int8 codes),
each rescoring its best candidates with the float vectors, which may live on disk or behind a callable,
so RAM holds only the codes (see `quantization.py` for the conversions).
"""

from __future__ import annotations

import itertools
import os
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch

from ..._util.cores import usable_cores
from .ann import IndexFileError, as_ids, as_vectors, check_k, check_threads, read_footer, write_atomic
from .quantization import HAMMING_BLOCK, buckets, hamming_into, packed_words, quantize_embeddings, ranges_from

__all__ = ["BinaryIndex", "Int8Index", "RescoreSource"]

_FORMAT_VERSION = 1
_ALIGN = 64  # byte alignment of the arrays in a saved file
# Rows of int8 codes converted to float per matmul: few queries want the float block to stay in cache,
# many queries want large blocks (fewer top-k merges). Measured on the benchmark machine.
_INT8_CHUNK_PER_QUERY, _INT8_CHUNK_MIN, _INT8_CHUNK_MAX = 256, 2048, 32_768

RescoreSource = Any
"""Float vectors for rescoring: an array indexed by id (e.g. np.load(path, mmap_mode="r")) or a callable
mapping a sorted int64 id array to an (n, dim) array."""


# ---------------------------------------------------------------- indexes over codes


_Index = TypeVar("_Index", bound="_QuantizedIndex")


class _QuantizedIndex(ABC):
    """Codes sorted by id (so lookups are binary searches and no id map is needed), rescoring, save/load."""

    _FORMAT = ""
    _CODE_DTYPE: type[np.generic] = np.uint8
    _COLUMN_MAJOR = False  # True: codes are stored (width, n), one contiguous row per code word

    def __init__(
        self,
        dim: int,
        rescore_vectors: RescoreSource | None = None,
        rescore_multiplier: int = 4,
        threads: int = 0,
    ) -> None:
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ValueError(f"dim must be a positive integer, not {dim!r}")
        self.dim = int(dim)
        self.rescore_vectors = rescore_vectors
        self.rescore_multiplier = self._check_multiplier(rescore_multiplier)
        self.threads = check_threads(threads)
        self._n = 0
        self._ids = np.zeros(0, dtype=np.int64)
        self._codes = self._allocate(0)
        self._view = False

    # -- subclass hooks
    @property
    @abstractmethod
    def _width(self) -> int:
        """Code words per vector."""

    @abstractmethod
    def _encode(self, vectors: np.ndarray) -> np.ndarray:
        """Codes (n, width) of float vectors (n, dim)."""

    @abstractmethod
    def _candidates(self, queries: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, scores), both (q, m), best first by the quantized score (larger = better)."""

    def _rescore_without_source(self, queries: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        """Better scores for candidate `rows` when no float vectors are given, or None if there are none."""
        return None

    def _extra_config(self) -> dict[str, Any]:
        return {}

    def _extra_arrays(self) -> list[np.ndarray]:
        return []

    # -- storage
    @staticmethod
    def _check_multiplier(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"rescore_multiplier must be a positive integer, not {value!r}")
        return int(value)

    def _allocate(self, capacity: int) -> np.ndarray:
        shape = (self._width, capacity) if self._COLUMN_MAJOR else (capacity, self._width)
        return np.zeros(shape, dtype=self._CODE_DTYPE)

    def _live_codes(self) -> np.ndarray:
        return self._codes[:, : self._n] if self._COLUMN_MAJOR else self._codes[: self._n]

    def _rows_codes(self, rows: np.ndarray) -> np.ndarray:
        """Codes of `rows` as (len(rows), width)."""
        return self._codes[:, rows].T if self._COLUMN_MAJOR else self._codes[rows]

    def _find(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, present) of `keys` in the sorted id array."""
        live = self._ids[: self._n]
        rows = np.searchsorted(live, keys)
        present = rows < self._n
        present[present] = live[rows[present]] == keys[present]
        return rows, present

    def _check_writable(self) -> None:
        if self._view:
            raise ValueError("this index is a read-only memory-mapped view: load with view=False to edit")

    def add(self, ids: Any, embeddings: Any) -> None:
        """Quantize float `embeddings` and store them under `ids`; an id already present is replaced."""
        self._check_writable()
        keys = as_ids(ids)
        vectors = as_vectors(embeddings, self.dim, "embeddings")
        if vectors.shape[0] != keys.size:
            raise ValueError(f"got {keys.size} ids but {vectors.shape[0]} embeddings")
        if keys.size == 0:
            return
        codes = self._encode(vectors)
        rows, present = self._find(keys)
        if present.any():
            if self._COLUMN_MAJOR:
                self._codes[:, rows[present]] = codes[present].T
            else:
                self._codes[rows[present]] = codes[present]
        keys, codes = keys[~present], codes[~present]
        if keys.size == 0:
            return
        order = np.argsort(keys)
        keys, codes = keys[order], codes[order]
        n, m = self._n, keys.size
        if n == 0 or keys[0] > self._ids[n - 1]:  # appending larger ids: amortized O(m)
            if n + m > len(self._ids):
                self._grow(max(n + m, 2 * len(self._ids)))
            self._ids[n : n + m] = keys
            if self._COLUMN_MAJOR:
                self._codes[:, n : n + m] = codes.T
            else:
                self._codes[n : n + m] = codes
        else:
            where = np.searchsorted(self._ids[:n], keys)
            self._ids = np.insert(self._ids[:n], where, keys)
            axis = 1 if self._COLUMN_MAJOR else 0
            self._codes = np.insert(self._live_codes(), where, codes.T if self._COLUMN_MAJOR else codes, axis)
        self._n = n + m

    def _grow(self, capacity: int) -> None:
        ids = np.zeros(capacity, dtype=np.int64)
        ids[: self._n] = self._ids[: self._n]
        codes = self._allocate(capacity)
        if self._COLUMN_MAJOR:
            codes[:, : self._n] = self._live_codes()
        else:
            codes[: self._n] = self._live_codes()
        self._ids, self._codes = ids, codes

    def remove(self, ids: Any) -> int:
        """Delete `ids`; ids that are not in the index are ignored. Returns how many were removed."""
        self._check_writable()
        keys = np.unique(as_ids(ids, unique=False))
        rows, present = self._find(keys)
        rows = rows[present]
        if rows.size == 0:
            return 0
        self._ids = np.delete(self._ids[: self._n], rows)
        self._codes = np.delete(self._live_codes(), rows, axis=1 if self._COLUMN_MAJOR else 0)
        self._n -= rows.size
        return int(rows.size)

    def _fetch(self, ids: np.ndarray) -> np.ndarray:
        """Float vectors of sorted unique `ids` from `rescore_vectors`, checked to be (len(ids), dim)."""
        source: Any = self.rescore_vectors
        try:
            vectors = source(ids) if callable(source) else source[ids]
        except IndexError as e:
            raise ValueError(f"rescore_vectors has no row for some of the ids up to {int(ids[-1])}") from e
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (ids.size, self.dim):
            raise ValueError(
                f"rescore_vectors returned shape {vectors.shape} for {ids.size} ids, expected "
                f"({ids.size}, {self.dim})"
            )
        return vectors

    def search(
        self, queries: Any, k: int, rescore: bool = True, rescore_multiplier: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The `k` best ids per float query, best first: (ids (q, k) int64, scores (q, k) float32).

        With `rescore`, the `rescore_multiplier * k` best candidates by the quantized score are re-ranked
        by the float dot product (see the class docstring for what is used without `rescore_vectors`).
        Scores are larger = better. Rows with fewer than `k` results are padded with id -1, score -inf.
        """
        k = check_k(k)
        q = as_vectors(queries, self.dim, "queries")
        ids = np.full((q.shape[0], k), -1, dtype=np.int64)
        scores = np.full((q.shape[0], k), -np.inf, dtype=np.float32)
        if q.shape[0] == 0 or self._n == 0:
            return ids, scores
        multiplier = self.rescore_multiplier if rescore_multiplier is None else rescore_multiplier
        multiplier = self._check_multiplier(multiplier)
        m = min(self._n, k * multiplier if rescore else k)
        rows, found = self._candidates(q, m)
        if rescore:
            if self.rescore_vectors is not None:
                unique, inverse = np.unique(self._ids[rows], return_inverse=True)
                vectors = self._fetch(unique)[inverse.reshape(rows.shape)]
                found = np.einsum("qd,qmd->qm", q, vectors, dtype=np.float32)
            else:
                approximate = self._rescore_without_source(q, rows)
                found = found if approximate is None else approximate
            order = np.argsort(-found, axis=1, kind="stable")[:, :k]
            rows, found = np.take_along_axis(rows, order, 1), np.take_along_axis(found, order, 1)
        width = min(k, rows.shape[1])
        ids[:, :width] = self._ids[rows[:, :width]]
        scores[:, :width] = found[:, :width]
        return ids, scores

    def _workers(self) -> int:
        if self.threads:
            return self.threads
        return usable_cores()

    def __len__(self) -> int:
        return self._n

    def __contains__(self, id: object) -> bool:
        if isinstance(id, bool) or not isinstance(id, (int, np.integer)) or id < 0:
            return False
        return bool(self._find(np.array([id], dtype=np.int64))[1][0])

    def ids(self) -> np.ndarray:
        """All ids in the index, ascending, as int64."""
        return np.array(self._ids[: self._n])

    def memory_bytes(self) -> int:
        """Bytes of RAM held for ids and codes, spare capacity included (memory-mapped arrays count 0)."""
        arrays = [self._ids, self._codes, *self._extra_arrays()]
        return int(sum(a.nbytes for a in arrays if not isinstance(a, np.memmap)))

    def get_config_dict(self) -> dict[str, Any]:
        """The constructor arguments that define the index (not the rescoring source or threads)."""
        return {"dim": self.dim, "rescore_multiplier": self.rescore_multiplier, **self._extra_config()}

    @property
    def is_view(self) -> bool:
        """True when the codes are a read-only memory-mapped view of a file (`load(path, view=True)`)."""
        return self._view

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ids, codes and configuration to one file, atomically (temporary sibling, then rename)."""
        ids = np.ascontiguousarray(self._ids[: self._n], dtype="<i8")
        codes = self._live_codes()
        codes_offset = -(-ids.nbytes // _ALIGN) * _ALIGN
        footer = {
            "format": self._FORMAT,
            "version": _FORMAT_VERSION,
            "config": self.get_config_dict(),
            "count": self._n,
            "arrays": {
                "ids": {"offset": 0, "dtype": ids.dtype.str, "shape": list(ids.shape)},
                "codes": {"offset": codes_offset, "dtype": codes.dtype.str, "shape": list(codes.shape)},
            },
        }

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as f:
                f.write(ids.tobytes())
                f.write(b"\0" * (codes_offset - ids.nbytes))
                for row in codes:  # row by row: `codes` may be a strided slice of a larger buffer
                    f.write(np.ascontiguousarray(row).tobytes())

        write_atomic(path, write, footer)

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(dim={self.dim}, size={self._n}, rescore_multiplier={self.rescore_multiplier})"

    @classmethod
    def load(
        cls: type[_Index],
        path: str | os.PathLike[str],
        view: bool = False,
        rescore_vectors: RescoreSource | None = None,
        threads: int = 0,
    ) -> _Index:
        """Load an index written by `save` (`view=True`: memory-map the codes read-only).

        The rescoring source is not stored: pass it again. Raises FileNotFoundError for a missing file and
        IndexFileError (a ValueError) for a truncated or foreign one.
        """
        path = Path(path)
        footer = read_footer(path, cls._FORMAT)
        try:
            index = cls(**footer["config"], rescore_vectors=rescore_vectors, threads=threads)
        except TypeError as e:
            raise IndexFileError(f"{path}: bad stored configuration ({e})") from e
        n = footer.get("count")
        arrays = footer.get("arrays")
        if not isinstance(n, int) or n < 0 or not isinstance(arrays, dict):
            raise IndexFileError(f"{path}: the index footer has no valid count and array layout")
        expected = {
            "ids": ("<i8", [n]),
            "codes": (
                np.dtype(cls._CODE_DTYPE).newbyteorder("<").str,
                [index._width, n] if cls._COLUMN_MAJOR else [n, index._width],
            ),
        }
        loaded: dict[str, np.ndarray] = {}
        for name, (dtype, shape) in expected.items():
            spec = arrays.get(name)
            if not isinstance(spec, dict) or spec.get("dtype") != dtype or spec.get("shape") != shape:
                raise IndexFileError(
                    f"{path}: array {name!r} is {spec}, expected dtype {dtype} shape {shape}"
                )
            offset = int(spec["offset"])
            if offset + int(np.prod(shape)) * np.dtype(dtype).itemsize > footer["payload_bytes"]:
                raise IndexFileError(f"{path}: array {name!r} runs past the end of the data")
            if view and n:
                loaded[name] = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=tuple(shape))
            else:
                count = int(np.prod(shape))
                loaded[name] = np.fromfile(path, dtype=dtype, count=count, offset=offset).reshape(shape)
        if n and (np.any(np.diff(loaded["ids"]) <= 0) or loaded["ids"][0] < 0):
            raise IndexFileError(f"{path}: the stored ids are not strictly increasing non-negative integers")
        index._ids, index._codes, index._n, index._view = loaded["ids"], loaded["codes"], n, bool(view)
        return index


class BinaryIndex(_QuantizedIndex):
    """Binary (sign-bit) quantized index: exact Hamming top-k, then float rescoring.

    Memory per vector: ceil(dim / 64) * 8 bytes of packed bits + 8 bytes of id (d = 384: 48 + 8 B, vs
    1536 B for float32). Search scans every code with XOR + popcount on 64-bit words (numpy, split over
    `threads` threads, 0 = all cores), keeps the `rescore_multiplier * k` nearest by Hamming distance and
    re-ranks them by float dot product with the query. The float corpus vectors come from
    `rescore_vectors` (an array indexed by id, e.g. np.load(..., mmap_mode="r"), or a callable ids ->
    vectors); without it, candidates are re-ranked against their own ±1 bits (query in float), which
    needs no extra memory but helps less. `search(..., rescore=False)` returns Hamming order with scores
    = -Hamming distance. Use normalized embeddings for cosine similarity.
    """

    _FORMAT = "munjang-binary"
    _CODE_DTYPE = np.uint64
    _COLUMN_MAJOR = True

    @property
    def _width(self) -> int:
        return -(-self.dim // 64)

    def _encode(self, vectors: np.ndarray) -> np.ndarray:
        return packed_words(np.packbits(vectors > 0, axis=1))

    def _candidates(self, queries: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        words = self._encode(queries)
        columns = self._live_codes()
        n = self._n
        rows = np.empty((len(words), m), dtype=np.int64)
        distances = np.empty((len(words), m), dtype=np.uint16)
        workers = min(self._workers(), max(1, n // HAMMING_BLOCK))

        def nearest(i: int, pool: ThreadPoolExecutor | None) -> None:
            dist = np.empty(n, dtype=np.uint16)
            if pool is None:
                hamming_into(columns, words[i], dist, 0, n)
            else:
                bounds = np.linspace(0, n, workers + 1).astype(int)
                spans = list(itertools.pairwise(bounds))
                list(pool.map(lambda s: hamming_into(columns, words[i], dist, s[0], s[1]), spans))
            # Distances are small integers: the m-th smallest comes from a histogram, far cheaper than
            # argpartition; a stable sort of the few rows within it keeps lower ids first on ties.
            threshold = np.searchsorted(np.cumsum(np.bincount(dist, minlength=self.dim + 1)), m)
            within = np.flatnonzero(dist <= threshold)
            rows[i] = within[np.argsort(dist[within], kind="stable")[:m]]
            distances[i] = dist[rows[i]]

        if workers == 1:
            for i in range(len(words)):
                nearest(i, None)
        else:
            with ThreadPoolExecutor(workers) as pool:
                if len(words) == 1:
                    nearest(0, pool)
                else:
                    list(pool.map(lambda i: nearest(i, None), range(len(words))))
        return rows, -distances.astype(np.float32)

    def _rescore_without_source(self, queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Float query . the candidates' ±1 sign vectors (what sentence-transformers rescores with)."""
        codes = self._rows_codes(rows.reshape(-1))
        bits = np.unpackbits(np.ascontiguousarray(codes).view(np.uint8), axis=1)[:, : self.dim]
        signs = (bits.astype(np.float32) * 2 - 1).reshape(*rows.shape, self.dim)
        return np.einsum("qd,qmd->qm", queries, signs, dtype=np.float32)


class Int8Index(_QuantizedIndex):
    """int8 scalar-quantized index: the float query scored against int8 codes, then float rescoring.

    Memory per vector: dim bytes + 8 bytes of id (d = 384: 384 + 8 B, vs 1536 B for float32). Each
    dimension is cut into 256 buckets between the minimum and maximum of `ranges` (shape (2, dim)), of
    `calibration_embeddings`, or else of the first batch added (as `quantize_embeddings(..., "int8")`).
    Candidates are ranked by the dot product of the float query with the dequantized codes (bucket
    centres), computed with torch on int8 blocks converted to float: this skips quantizing the query, so
    only the corpus side is approximate. With `rescore_vectors` (an array indexed by id or a callable ids
    -> vectors) the `rescore_multiplier * k` best are re-ranked by the exact float dot product; without
    it the scores are the dequantized dot products. Uses torch's thread setting.
    """

    _FORMAT = "munjang-int8"
    _CODE_DTYPE = np.int8

    def __init__(
        self,
        dim: int,
        ranges: np.ndarray | None = None,
        calibration_embeddings: np.ndarray | None = None,
        rescore_vectors: RescoreSource | None = None,
        rescore_multiplier: int = 4,
        threads: int = 0,
    ) -> None:
        super().__init__(dim, rescore_vectors, rescore_multiplier, threads)
        if ranges is not None and calibration_embeddings is not None:
            raise ValueError("pass ranges or calibration_embeddings, not both")
        self._ranges: np.ndarray | None = None
        if calibration_embeddings is not None:
            calibration = as_vectors(calibration_embeddings, self.dim, "calibration_embeddings")
            ranges = ranges_from(calibration, "int8", None)
        if ranges is not None:
            self._set_ranges(ranges)

    def _set_ranges(self, ranges: Any) -> None:
        arr = np.asarray(ranges, dtype=np.float32)
        if arr.shape != (2, self.dim) or not np.isfinite(arr).all():
            raise ValueError(
                f"ranges must be a finite (2, {self.dim}) array of minima and maxima, got {arr.shape}"
            )
        if (arr[1] < arr[0]).any():
            raise ValueError("ranges: a maximum is below its minimum")
        self._ranges = arr

    @property
    def ranges(self) -> np.ndarray | None:
        """The (2, dim) float32 minima and maxima of the buckets (None until set by the first add)."""
        return None if self._ranges is None else self._ranges.copy()

    @property
    def _width(self) -> int:
        return self.dim

    def _encode(self, vectors: np.ndarray) -> np.ndarray:
        if self._ranges is None:
            self._set_ranges(ranges_from(vectors, "int8", None))
        codes = quantize_embeddings(vectors, "int8", ranges=self._ranges)
        assert isinstance(codes, np.ndarray)
        return codes

    def _candidates(self, queries: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        assert self._ranges is not None  # set by the first add, and the index is not empty
        starts, steps = buckets(self._ranges)
        # x ~ starts + steps * (code + 128.5), so q.x = q.(starts + 128.5 steps) + (q * steps).code
        weights = torch.from_numpy(queries * steps)
        bias = torch.from_numpy(queries @ (starts + 128.5 * steps)).unsqueeze(1)
        codes = self._live_codes()
        best_scores = torch.full((len(queries), 0), float("-inf"))
        best_rows = torch.zeros((len(queries), 0), dtype=torch.long)
        chunk = min(_INT8_CHUNK_MAX, max(_INT8_CHUNK_MIN, _INT8_CHUNK_PER_QUERY * len(queries)))
        for start in range(0, self._n, chunk):
            block = torch.from_numpy(codes[start : start + chunk].astype(np.float32))
            scores = torch.addmm(bias, weights, block.T)
            top = torch.topk(scores, min(m, scores.shape[1]), dim=1)
            best_scores = torch.cat([best_scores, top.values], dim=1)
            best_rows = torch.cat([best_rows, top.indices + start], dim=1)
            if best_scores.shape[1] > m:
                keep = torch.topk(best_scores, m, dim=1)
                best_scores, best_rows = keep.values, torch.gather(best_rows, 1, keep.indices)
        order = torch.sort(best_scores, dim=1, descending=True, stable=True).indices
        rows = torch.gather(best_rows, 1, order).numpy()
        return rows, torch.gather(best_scores, 1, order).numpy()

    def _extra_config(self) -> dict[str, Any]:
        return {"ranges": None if self._ranges is None else self._ranges.tolist()}

    def _extra_arrays(self) -> list[np.ndarray]:
        return [] if self._ranges is None else [self._ranges]
