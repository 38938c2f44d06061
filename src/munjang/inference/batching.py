"""Batches formed by a token budget from exact token lengths, and tokenization that runs ahead.

Sorting by true token count (longest first) and filling each batch up to `max_tokens` padded
tokens means a batch pads only to its own longest member and short sentences travel in large
batches, so the matrix units stay busy without spending FLOPs on padding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

T = TypeVar("T")


# What starting one more model call costs, in padded tokens: kernel launches, the Python loop over
# layers, small-matrix inefficiency. Measured on MiniLM (torch fp32 and bf16, 2 cores): a batch of
# one 12-token input costs about what 40-80 more padded tokens in a full batch do.
DEFAULT_BATCH_COST = 64


def token_budget_batches(
    lengths: Sequence[int] | np.ndarray,
    max_tokens: int | None = None,
    max_rows: int | None = None,
    batch_cost: int = DEFAULT_BATCH_COST,
) -> list[np.ndarray]:
    """Row indices per batch, longest inputs first, split where it wastes least.

    Inputs are sorted by length (longest first, stable) and cut into consecutive batches that
    minimise padded tokens plus `batch_cost` per batch, so a batch pads only to its own longest
    member and a short tail is not padded up to a long head: with mixed lengths (a server batch
    of unrelated requests) this cuts the padding a greedy fill leaves by several times.

    A batch holds at most `max_rows` rows and at most `max_tokens` padded tokens (rows x its
    longest length); a single input longer than the budget gets a batch of its own. With neither
    limit, everything is one batch.
    """
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
    if max_rows is not None and max_rows < 1:
        raise ValueError(f"max_rows (batch_size) must be at least 1, not {max_rows}")
    if batch_cost < 0:
        raise ValueError(f"batch_cost must be at least 0, not {batch_cost}")
    sizes = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-sizes, kind="stable")
    n = len(order)
    if n == 0:
        return []
    if max_tokens is None and max_rows is None:
        return [order]
    longest = np.maximum(sizes[order], 1)
    window = n if max_rows is None else min(n, max_rows)
    if max_tokens is not None:  # no batch can hold more rows than the budget over the shortest input
        window = min(window, max(1, max_tokens // int(longest[-1])))
    best = np.zeros(n + 1, dtype=np.float64)  # best[j]: least cost of batching the first j inputs
    cut = np.zeros(n + 1, dtype=np.int64)
    for j in range(1, n + 1):
        lo = max(0, j - window)
        rows = np.arange(j - lo, 0, -1)
        padded = rows * longest[lo:j]
        cost = best[lo:j] + padded + batch_cost
        if max_tokens is not None:
            cost[(padded > max_tokens) & (rows > 1)] = np.inf
        k = int(np.argmin(cost))
        best[j], cut[j] = cost[k], lo + k
    bounds: list[int] = []
    j = n
    while j > 0:
        bounds.append(j)
        j = int(cut[j])
    starts = [0, *reversed(bounds[1:])]
    return [order[a:b] for a, b in zip(starts, reversed(bounds), strict=True)]


def padding_fraction(lengths: Sequence[int] | np.ndarray, batches: Sequence[np.ndarray]) -> float:
    """Share of the computed tokens that are padding (0 = none wasted)."""
    sizes = np.asarray(lengths, dtype=np.int64)
    real = int(sizes.sum())
    padded = sum(len(b) * int(sizes[b].max()) for b in batches if len(b))
    return 0.0 if padded == 0 else 1.0 - real / padded


@dataclass
class Chunk(Generic[T]):
    """One slice of the input: where it starts and what preparing it produced."""

    start: int
    stop: int
    value: T


def prepared_chunks(total: int, chunk_size: int, prepare: Callable[[int, int], T]) -> Iterator[Chunk[T]]:
    """Yield `prepare(start, stop)` for consecutive slices, preparing the next slice in a background
    thread while the caller works on the current one (tokenization overlapped with model compute)."""
    if total <= 0:
        return
    bounds = [(s, min(s + chunk_size, total)) for s in range(0, total, chunk_size)]
    if len(bounds) == 1:
        yield Chunk(0, total, prepare(0, total))
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="munjang-tokenize") as pool:
        pending: Future[T] = pool.submit(prepare, *bounds[0])
        for i, (start, stop) in enumerate(bounds):
            value = pending.result()
            if i + 1 < len(bounds):
                pending = pool.submit(prepare, *bounds[i + 1])
            yield Chunk(start, stop, value)
