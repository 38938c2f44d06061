"""Dynamic batching: concurrent encode requests merged into model batches by a token budget.

Each request is tokenized once, on arrival (the ids give exact lengths, the usage count, and go
straight to the model). One worker thread per model collects what has arrived — waiting at most
`max_wait_ms` for more once something is queued — and fills a batch up to `max_tokens` real
tokens by taking a slice from every waiting request in turn, so a huge request is encoded in
pieces between the small ones and cannot starve them. Requests with different encode options
(prompt, truncation, dimensions) never share a batch. The batch is computed by the encoder in
this process, or by an `EncoderProcess` holding the same model (`compute`).

Admission is by expected wait: the batcher fits what a batch of its model costs, a fixed part plus
a part per token (`BatchCost`, measured on every batch), and a request whose tokens, behind those
queued, would not be encoded before its deadline (or `max_queue_wait_s`) is refused at arrival with
`QueueFullError` and the seconds the queue needs to drain, which the server sends as Retry-After (a
503): on a slow CPU the client learns at once, instead of timing out on work accepted for nobody.
The bounds by requests and by tokens (`max_queued_requests`, `max_queued_tokens`) stay as hard
ceilings. A job whose future is cancelled (its client left) or whose deadline passes while it waits
is dropped before its next rows are encoded, and counted (`BatcherStats`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..encoders.dense.encoder import SentenceEncoder
from ..errors import MunjangError
from ..inference.memory import release_freed_memory
from .batch_cost import BatchCost

# What warm-up batches hold: sentences of the length the server's clients send most (one to a few
# dozen words), Korean and English. Batches of two sizes give the fit its fixed and per-token parts;
# the first, measured at once so a burst soon after the start is admitted by a speed, also pays the
# one-time costs (allocator, kernels for new shapes), which errs on the side of refusing until real
# batches correct it.
WARM_UP_TEXT = (
    "서울의 한 도서관은 주민들이 집에서도 소장 자료를 찾아볼 수 있도록 모든 책을 전산화하기로 했다. "
    "The library will scan every book so that readers can search the collection from home."
)
WARM_UP_ROWS = (16, 4)  # rows of each warm-up batch


class QueueFullError(MunjangError):
    """The batcher cannot take the request now; `retry_after` is the seconds its queue needs to drain."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class _Job:
    encoded: dict[str, list[list[int]]]
    lengths: list[int]
    options: dict[str, Any]
    key: Hashable
    future: Future[np.ndarray]
    deadline: float | None = None  # time.monotonic() past which nobody waits for it
    on_start: Callable[[], None] | None = None  # called once, when its first rows start encoding
    next: int = 0
    parts: dict[int, np.ndarray] = field(default_factory=dict)  # first row -> its vectors


@dataclass
class BatcherStats:
    """Counters for /metrics: batches run, rows and tokens encoded, the largest queue seen, requests
    admitted and refused (by expected wait, or at a hard bound), and dropped (client gone, deadline
    passed while queued)."""

    batches: int = 0
    rows: int = 0
    tokens: int = 0
    requests: int = 0
    max_queue_depth: int = 0
    cancelled: int = 0
    expired: int = 0
    refused_wait: int = 0
    refused_full: int = 0
    batch_rows: list[int] = field(default_factory=list)


class DynamicBatcher:
    """Merges `encode` calls from many threads into shared model batches (see the module docstring)."""

    def __init__(
        self,
        encoder: SentenceEncoder,
        max_tokens: int = 2048,
        max_wait_ms: float = 2.0,
        slice_rows: int = 64,
        compute: Callable[..., np.ndarray] | Sequence[Callable[..., np.ndarray]] | None = None,
        max_queued_requests: int | None = None,
        max_queued_tokens: int | None = None,
        max_queue_wait_s: float | None = None,
        warm_up: bool = False,
    ) -> None:
        """`compute(encoded, **options)` computes a batch: `encoder.encode_tokenized` by default, or the
        same method of an `EncoderProcess` holding this model. Given several (one per model
        process), each gets a thread of its own and batches run side by side. `max_queue_wait_s`:
        the longest a request may be expected to wait, whatever its deadline; until the speed is
        measured, no more than a batch a compute thread waits. `warm_up`: each compute thread first
        runs warm-up batches of its own (`WARM_UP_ROWS`), so the cost is known soon after the server
        starts, before its first burst if there is time."""
        if max_tokens < 1 or slice_rows < 1 or max_wait_ms < 0:
            raise ValueError("max_tokens and slice_rows must be at least 1, max_wait_ms at least 0")
        self.encoder = encoder
        if compute is None:
            computes: list[Callable[..., np.ndarray]] = [encoder.encode_tokenized]
        elif callable(compute):
            computes = [compute]
        else:
            computes = list(compute)
        if not computes:
            raise ValueError("compute must name at least one function")
        self.max_tokens = max_tokens
        self.max_queued_requests = max_queued_requests
        self.max_queued_tokens = max_queued_tokens
        self.max_queue_wait_s = max_queue_wait_s
        self.cost = BatchCost(max_tokens)
        self.queued_tokens = 0
        self.max_wait = max_wait_ms / 1000
        self.slice_rows = slice_rows
        self.stats = BatcherStats()
        self.on_batch: Callable[[int, int, float], None] | None = None  # (rows, tokens, seconds) per batch
        self._jobs: deque[_Job] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._run, args=(fn, warm_up), name=f"munjang-batcher-{i}", daemon=True)
            for i, fn in enumerate(computes)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def queue_depth(self) -> int:
        """Requests waiting or in progress."""
        with self._cond:
            return len(self._jobs)

    def submit(
        self, texts: Sequence[str], *, prompt_name: str | None = None, truncate: bool = True, **options: Any
    ) -> Future[np.ndarray]:
        """Tokenize `texts` (with the prompt; over-long inputs cut, or InputTooLongError with
        `truncate=False`) and queue them; the future gives their (n, dim) vectors. `options` are
        `encode_tokenized` keywords (`truncate_dim`, `normalize_embeddings`)."""
        encoded, prompt_length = self.encoder.token_ids(texts, prompt_name=prompt_name, truncate=truncate)
        if not truncate:
            self.encoder.transformer.check_lengths(encoded, "texts", "send truncate=true")
        return self.submit_tokenized(encoded, prompt_length=prompt_length, **options)

    def submit_tokenized(
        self,
        encoded: dict[str, list[list[int]]],
        *,
        prompt_length: int = 0,
        deadline: float | None = None,
        on_start: Callable[[], None] | None = None,
        **options: Any,
    ) -> Future[np.ndarray]:
        """Queue inputs tokenized already (`transformer.tokenize` output, prompt included).
        `on_start` is called (on the batcher's thread) when its first rows start encoding.
        `deadline` (`time.monotonic()`): when nobody waits for the vectors any more; a request that
        would not be encoded by then, or within `max_queue_wait_s`, is refused (QueueFullError), and
        one still queued then is dropped."""
        future: Future[np.ndarray] = Future()
        lengths = [len(ids) for ids in encoded["input_ids"]]
        if not lengths:
            future.set_result(np.zeros((0, self.encoder.get_embedding_dimension()), dtype=np.float32))
            return future
        options = {"prompt_length": prompt_length, **options}
        key = tuple(sorted((k, repr(v)) for k, v in options.items()))
        job = _Job(encoded, lengths, options, key, future, deadline, on_start)
        tokens = sum(lengths)
        with self._cond:
            if self._closed:
                raise RuntimeError("the batcher is closed")
            self._drop_cancelled()
            self._admit(tokens, deadline)
            self.queued_tokens += tokens
            self._jobs.append(job)
            self.stats.requests += 1
            self.stats.max_queue_depth = max(self.stats.max_queue_depth, len(self._jobs))
            self._cond.notify()
        return future

    def _admit(self, tokens: int, deadline: float | None) -> None:
        """Refuse a request of `tokens` that a hard bound or its expected wait rules out (call
        holding the lock). Past the request bound, an empty queue takes any request: alone, it
        waits for nothing."""
        drain = self.cost.seconds_for(self.queued_tokens)
        retry = max(1.0, drain / len(self._threads)) if drain is not None else 1.0
        if self.max_queued_requests is not None and len(self._jobs) >= self.max_queued_requests:
            self.stats.refused_full += 1
            message = f"{len(self._jobs)} requests are queued, the most this model takes"
            raise QueueFullError(message, retry)
        if not self._jobs:
            return
        if self.max_queued_tokens is not None and self.queued_tokens + tokens > self.max_queued_tokens:
            self.stats.refused_full += 1
            raise QueueFullError(
                f"{self.queued_tokens:,} tokens are queued; {tokens:,} more would pass the bound "
                f"of {self.max_queued_tokens:,}",
                retry,
            )
        expected = self.cost.seconds_for(self.queued_tokens + tokens)
        left = None if deadline is None else deadline - time.monotonic()
        limits = [s for s in (self.max_queue_wait_s, left) if s is not None]
        if not limits:
            return
        if expected is None:  # the speed is not known yet: no more than a batch a thread waits
            if self.queued_tokens + tokens > self.max_tokens * len(self._threads):
                self.stats.refused_wait += 1
                raise QueueFullError(
                    f"{self.queued_tokens:,} tokens are queued and this model's speed is not measured yet",
                    retry,
                )
            return
        expected = expected / len(self._threads) + self.max_wait
        if expected > min(limits):
            self.stats.refused_wait += 1
            raise QueueFullError(
                f"{self.queued_tokens:,} tokens are queued: this request would wait about "
                f"{expected:.1f} s, past its {min(limits):.1f} s",
                retry,
            )

    def encode(self, texts: Sequence[str], **options: Any) -> np.ndarray:
        """`submit` and wait."""
        return self.submit(texts, **options).result()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(timeout=30)

    def _take(self) -> list[tuple[_Job, int, int]]:
        """Slices (job, start, stop) for the next batch: round-robin over waiting jobs with the
        options of the oldest one, up to the token budget."""
        self._drop_cancelled()
        first = next((job for job in self._jobs if job.next < len(job.lengths)), None)
        if first is None:
            return []
        chosen: list[tuple[_Job, int, int]] = []
        budget = self.max_tokens
        progress = True
        cursor = {id(job): job.next for job in self._jobs}
        while budget > 0 and progress:
            progress = False
            for job in self._jobs:
                if job.key != first.key:
                    continue
                start = cursor[id(job)]
                stop = start
                while stop < len(job.lengths) and stop - start < self.slice_rows:
                    cost = job.lengths[stop]
                    if cost > budget and (chosen or stop > start):
                        break
                    budget -= cost
                    stop += 1
                if stop > start:
                    chosen.append((job, start, stop))
                    cursor[id(job)] = stop
                    progress = True
                if budget <= 0:
                    break
        for job, _, stop in chosen:
            job.next = max(job.next, stop)
        return chosen

    def _pending(self) -> bool:
        """Some job has rows no thread has taken yet (cancelled jobs dropped first)."""
        self._drop_cancelled()
        return any(job.next < len(job.lengths) for job in self._jobs)

    def _remove(self, job: _Job) -> None:
        """Take a job off the queue (call holding the lock)."""
        self._jobs.remove(job)
        self.queued_tokens -= sum(job.lengths)

    def _drop_cancelled(self) -> None:
        """Forget jobs nobody waits for any more (call holding the lock): cancelled ones, and those
        whose deadline passed before all their rows were taken (never computed for nobody)."""
        now = time.monotonic()
        for job in list(self._jobs):
            if job.future.cancelled():
                self._remove(job)
                self.stats.cancelled += 1
            elif job.deadline is not None and now > job.deadline and job.next < len(job.lengths):
                self._remove(job)
                self.stats.expired += 1
                job.future.cancel()

    def _warm_up(self, compute: Callable[..., np.ndarray]) -> None:
        """Warm-up batches of typical sentences (`WARM_UP_ROWS`), each measured into the cost fit (a
        failure is left to the first real batch to report)."""
        for rows in WARM_UP_ROWS:
            encoded, prompt_length = self.encoder.token_ids([WARM_UP_TEXT] * rows)
            started = time.perf_counter()
            try:
                compute(encoded, prompt_length=prompt_length)
            except Exception:
                return
            tokens = sum(len(ids) for ids in encoded["input_ids"])
            with self._cond:
                self.cost.observe(tokens, time.perf_counter() - started)

    def _run(self, compute: Callable[..., np.ndarray], warm_up: bool = False) -> None:
        if warm_up:
            self._warm_up(compute)
        while True:
            with self._cond:
                while not self._pending() and not self._closed:
                    self._cond.wait()
                if self._closed and not self._pending():
                    return
            if self.max_wait:
                time.sleep(self.max_wait)  # let concurrent requests arrive and join this batch
            with self._cond:
                chosen = self._take()
                if self._pending():  # rows left: wake another compute thread for them
                    self._cond.notify()
            if chosen:
                self._encode(chosen, compute)
                with self._cond:
                    idle = not self._pending()
                if idle:  # a burst is over: give its freed pages back (see inference/memory.py)
                    release_freed_memory()

    def _encode(self, chosen: list[tuple[_Job, int, int]], compute: Callable[..., np.ndarray]) -> None:
        merged: dict[str, list[list[int]]] = {
            key: [ids for job, start, stop in chosen for ids in job.encoded[key][start:stop]]
            for key in chosen[0][0].encoded
        }
        rows = len(merged["input_ids"])
        for job, _, _ in chosen:
            if job.on_start is not None:
                job.on_start()
                job.on_start = None
        started = time.perf_counter()
        try:
            vectors = compute(merged, **chosen[0][0].options)
        except Exception as error:  # the request that caused it fails; the others are retried alone
            self._fail_or_split(chosen, error, compute)
            return
        elapsed = time.perf_counter() - started
        tokens = sum(sum(job.lengths[start:stop]) for job, start, stop in chosen)
        with self._cond:
            self.cost.observe(tokens, elapsed)
            self.stats.batches += 1
            self.stats.rows += rows
            self.stats.tokens += tokens
            self.stats.batch_rows.append(rows)
            del self.stats.batch_rows[:-1000]
            offset = 0
            for job, start, stop in chosen:
                job.parts[start] = vectors[offset : offset + stop - start]
                offset += stop - start
            self._finish_done()
        if self.on_batch is not None:
            self.on_batch(rows, tokens, elapsed)

    def _fail_or_split(
        self, chosen: list[tuple[_Job, int, int]], error: Exception, compute: Callable[..., np.ndarray]
    ) -> None:
        if len({id(job) for job, _, _ in chosen}) == 1:
            job = chosen[0][0]
            with self._cond:
                if job in self._jobs:
                    self._remove(job)
            if not job.future.done():
                job.future.set_exception(error)
            return
        for job, start, stop in chosen:  # run each job's slice on its own: only the culprit fails
            if not job.future.done():
                self._encode([(job, start, stop)], compute)

    def _finish_done(self) -> None:
        """Resolve every job whose rows have all come back (call holding the lock)."""
        for job in [j for j in self._jobs if sum(len(p) for p in j.parts.values()) == len(j.lengths)]:
            self._remove(job)
            if not job.future.done():
                job.future.set_result(np.concatenate([job.parts[k] for k in sorted(job.parts)]))
