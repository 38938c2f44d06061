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


def token_budget_batches(
    lengths: Sequence[int] | np.ndarray,
    max_tokens: int | None = None,
    max_rows: int | None = None,
) -> list[np.ndarray]:
    """Row indices per batch, longest inputs first.

    A batch holds at most `max_rows` rows and at most `max_tokens` padded tokens
    (rows x its longest length); a single input longer than the budget gets a batch of its own.
    With neither limit, everything is one batch.
    """
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
    if max_rows is not None and max_rows < 1:
        raise ValueError(f"max_rows (batch_size) must be at least 1, not {max_rows}")
    sizes = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-sizes, kind="stable")
    batches: list[np.ndarray] = []
    start, n = 0, len(order)
    while start < n:
        longest = int(sizes[order[start]])
        rows = n - start
        if max_rows is not None:
            rows = min(rows, max_rows)
        if max_tokens is not None:
            rows = max(1, min(rows, max_tokens // max(longest, 1)))
        batches.append(order[start : start + rows])
        start += rows
    return batches


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
