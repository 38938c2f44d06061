"""Quantized embeddings: int8 / binary conversion (same results as sentence-transformers'
`quantize_embeddings`) and the Hamming distance over packed bits. The indexes that search such codes
are in `quantized_index.py`.

Memory per vector at d = 384: float32 1536 B, int8 384 B, binary 48 B (the indexes add 8 B for the id).
Binary search is an exact Hamming scan (numpy popcount over 64-bit words, threaded); int8 search scores
the float query against the int8 codes. Either way the `rescore_multiplier * k` best candidates are then
re-ranked by the float dot product with their float vectors, which may live on disk (a memory-mapped
array) or behind any callable, so RAM holds only the codes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = ["PRECISIONS", "hamming_distances", "quantize_embeddings"]

logger = logging.getLogger(__name__)

PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")
HAMMING_BLOCK = 16_384  # rows per popcount block: the temporaries stay in L2 cache


# ---------------------------------------------------------------- quantize_embeddings


def _to_numpy(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return (x.float() if x.dtype == torch.bfloat16 else x).detach().cpu().numpy()
    return x


def ranges_from(embeddings: np.ndarray, precision: str, calibration: np.ndarray | None) -> np.ndarray:
    if calibration is None:
        if embeddings.ndim == 1 or embeddings.shape[0] == 1:
            raise ValueError(
                f"cannot compute {precision} quantization ranges from a single embedding: pass `ranges` or "
                "`calibration_embeddings` from a representative set of embeddings"
            )
        if embeddings.shape[0] < 100:
            logger.warning(
                "computing %s quantization ranges from only %d embeddings; pass `ranges` or "
                "`calibration_embeddings` from more embeddings for stable buckets",
                precision,
                embeddings.shape[0],
            )
        calibration = embeddings
    calibration = np.asarray(_to_numpy(calibration))
    return np.vstack((np.min(calibration, axis=0), np.max(calibration, axis=0)))


def quantize_embeddings(
    embeddings: Any,
    precision: str,
    ranges: np.ndarray | None = None,
    calibration_embeddings: np.ndarray | None = None,
) -> np.ndarray | list[np.ndarray]:
    """Quantize float embeddings to float32, int8, uint8, binary or ubinary, as sentence-transformers does.

    int8/uint8: per-dimension buckets between the minimum and maximum of `ranges` (shape (2, dim)), else
    of `calibration_embeddings`, else of `embeddings` themselves (not recommended; needs 2+ rows). binary:
    the sign bits packed 8 per byte (`np.packbits(e > 0)`), as uint8 ("ubinary") or shifted by -128 to
    int8 ("binary"). Accepts a numpy array, a torch tensor, a list of vectors, or a list of (tokens, dim)
    matrices (quantized with shared buckets, returned as a list).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    embeddings = _to_numpy(embeddings)
    if isinstance(embeddings, list):
        if not embeddings:
            return []
        embeddings = [_to_numpy(e) for e in embeddings]
        if isinstance(embeddings[0], np.ndarray) and embeddings[0].ndim == 2:
            if precision.endswith("int8") and ranges is None:
                data = (
                    np.concatenate(embeddings) if calibration_embeddings is None else calibration_embeddings
                )
                if len(data):
                    ranges = ranges_from(data, precision, calibration_embeddings)
            out = [quantize_embeddings(m, precision, ranges, calibration_embeddings) for m in embeddings]
            return [np.asarray(m) for m in out]
        embeddings = np.array(embeddings)
    embeddings = np.asarray(embeddings)
    if embeddings.dtype in (np.uint8, np.int8):
        raise ValueError("embeddings to quantize must be float, not already quantized int8 or uint8")
    if embeddings.ndim == 2 and embeddings.shape[0] == 0:
        dim = embeddings.shape[1]
        if precision.endswith("int8"):
            return np.zeros((0, dim), dtype=np.int8 if precision == "int8" else np.uint8)
        if precision.endswith("binary"):
            return np.zeros((0, (dim + 7) // 8), dtype=np.int8 if precision == "binary" else np.uint8)
    if precision == "float32":
        return embeddings.astype(np.float32)
    if precision.endswith("int8"):
        if ranges is None:
            ranges = ranges_from(embeddings, precision, calibration_embeddings)
        starts, steps = buckets(np.asarray(ranges))
        q_vals = np.clip(np.floor((embeddings - starts) / steps), 0, 255)
        return q_vals.astype(np.uint8) if precision == "uint8" else (q_vals - 128).astype(np.int8)
    packed = np.packbits(embeddings > 0, axis=-1)
    return packed if precision == "ubinary" else (packed - 128).astype(np.int8)


def buckets(ranges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, steps) of the 256 int8 buckets per dimension, as sentence-transformers computes them."""
    ranges = ranges.astype(np.float32, copy=False)
    starts = ranges[0, :]
    steps = (ranges[1, :] - starts) / 255
    return starts, np.where(steps == 0, 1, steps)


# ---------------------------------------------------------------- Hamming distance


def _popcount_lut(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Bits set per uint64 of `x`, into uint8 `out`: the fallback for numpy < 2 (no np.bitwise_count)."""
    counts = _BYTE_POPCOUNT[x.view(np.uint8).reshape(-1, 8)]
    return np.sum(counts, axis=1, dtype=np.uint8, out=out)


_BYTE_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
_popcount: Callable[..., np.ndarray] = getattr(np, "bitwise_count", None) or _popcount_lut


def packed_words(packed: np.ndarray) -> np.ndarray:
    """Packed bit rows (n, bytes) as (n, words) uint64, zero-padded to whole 64-bit words."""
    packed = np.ascontiguousarray(packed).view(np.uint8)
    pad = -packed.shape[1] % 8
    if pad:
        packed = np.concatenate([packed, np.zeros((packed.shape[0], pad), dtype=np.uint8)], axis=1)
    return np.ascontiguousarray(packed).view(np.uint64)


def hamming_into(columns: np.ndarray, query: np.ndarray, out: np.ndarray, start: int, stop: int) -> None:
    """out[start:stop] = Hamming distances of `query` (words,) to columns (words, n)[:, start:stop]."""
    tmp = np.empty(HAMMING_BLOCK, dtype=np.uint64)
    count = np.empty(HAMMING_BLOCK, dtype=np.uint8)
    for s in range(start, stop, HAMMING_BLOCK):
        e = min(stop, s + HAMMING_BLOCK)
        size = e - s
        acc = out[s:e]
        for w in range(columns.shape[0]):
            np.bitwise_xor(columns[w, s:e], query[w], out=tmp[:size])
            _popcount(tmp[:size], out=count[:size])
            if w == 0:
                np.copyto(acc, count[:size])
            else:
                np.add(acc, count[:size], out=acc)


def hamming_distances(query_bits: np.ndarray, corpus_bits: np.ndarray) -> np.ndarray:
    """Hamming distances (q, n) uint16 between packed bit rows (uint8 "ubinary" or int8 "binary" codes)."""
    q = np.atleast_2d(np.asarray(query_bits))
    c = np.atleast_2d(np.asarray(corpus_bits))
    for name, arr in (("query_bits", q), ("corpus_bits", c)):
        if arr.dtype not in (np.uint8, np.int8) or arr.ndim != 2:
            raise ValueError(
                f"{name} must be packed bits: a 2-D uint8 or int8 array, got {arr.dtype} {arr.shape}"
            )
    if q.shape[1] != c.shape[1]:
        raise ValueError(f"query_bits have {q.shape[1]} bytes per row, corpus_bits {c.shape[1]}")
    columns = np.ascontiguousarray(packed_words(c).T)
    queries = packed_words(q)
    out = np.empty((len(queries), len(c)), dtype=np.uint16)
    for i, query in enumerate(queries):
        hamming_into(columns, query, out[i], 0, len(c))
    return out
