"""Bounded work off the event loop, for every route that computes outside the embeddings batcher
(rerank, tokenize, map, similarity on whole-text models).

The same bounds as `/v1/embeddings`:
- **a queue bound**: at most `workers` jobs run and `max_queued` wait; past that a request is
  refused at once with 503 and Retry-After, so waiting work never grows past what clears in a
  bounded time;
- **admission by expected wait**: the gate keeps a moving estimate of how long a job takes, and a
  request that would wait behind the jobs before it longer than `max_wait_s` (or its deadline) is
  refused at arrival the same way, with Retry-After saying when a worker will be free;
- **the request deadline**: a request still unanswered after `request_timeout_s` is answered 503;
- **cancellation**: when the deadline passes or the client leaves, a job not yet started never
  runs, and a running one stops at its next step (work that loops checks its `CancelToken`).

A job counts against the bound until it has really stopped, not when its client left, so a burst
of abandoned requests cannot pile up work behind the bound.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import TypeVar

from starlette.requests import Request

from .._util.tracing import carry
from .embed import retry_after, wait_for_client
from .errors import APIError

T = TypeVar("T")


class Cancelled(Exception):
    """Raised inside a job whose request was abandoned (deadline passed or client gone)."""


class CancelToken:
    """Set when a job's request is abandoned; long work calls `check()` between its steps."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise Cancelled once the request is abandoned."""
        if self._event.is_set():
            raise Cancelled


class Rate:
    """A moving estimate of a rate (here jobs per second) from the work done: each measurement moves
    the estimate a `weight` of the way to its own rate, so work that speeds up or slows down (a busier
    machine) is followed within a few jobs."""

    def __init__(self, weight: float = 0.3) -> None:
        self.weight = weight
        self.per_s: float | None = None

    def observe(self, units: int, seconds: float) -> None:
        if units <= 0 or seconds <= 0:
            return
        rate = units / seconds
        known = self.per_s
        self.per_s = rate if known is None else known + self.weight * (rate - known)

    def seconds_for(self, units: int) -> float | None:
        """How long `units` of work take at the estimate, or None before any was measured."""
        return None if self.per_s is None else units / self.per_s


class ComputeGate:
    """Runs jobs on `workers` threads with at most `max_queued` waiting (see the module docstring)."""

    def __init__(
        self, workers: int, max_queued: int, timeout_s: float, max_wait_s: float | None = None
    ) -> None:
        if workers < 1 or max_queued < 0:
            raise ValueError("workers must be at least 1 and max_queued at least 0")
        self.workers = workers
        self.limit = workers + max_queued
        self.timeout_s = timeout_s
        self.max_wait_s = timeout_s if max_wait_s is None else min(max_wait_s, timeout_s)
        self.job_time = Rate()  # jobs per second: its inverse is the mean job's seconds
        self.refused_wait = 0
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="munjang-compute")
        self._lock = threading.Lock()
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        """Jobs running or waiting."""
        with self._lock:
            return self._in_flight

    def admit(self) -> None:
        """Count one more job, or 503 with Retry-After when the bound is reached or the job would
        wait, behind those before it, past `max_wait_s`."""
        with self._lock:
            ahead = self._in_flight - self.workers + 1  # jobs to finish before a worker is free
            one = self.job_time.seconds_for(1)
            wait = 0.0 if one is None or ahead <= 0 else one * ahead / self.workers
            if self._in_flight >= self.limit:
                message = f"the server is busy ({self._in_flight} requests computing or waiting)"
                raise APIError(503, message, None, "queue_full", retry_after(wait))
            if wait > self.max_wait_s:
                self.refused_wait += 1
                message = (
                    f"the server is busy: this request would wait about {wait:.1f} s behind "
                    f"{self._in_flight} others, past {self.max_wait_s:.1f} s"
                )
                raise APIError(503, message, None, "queue_full", retry_after(wait))
            self._in_flight += 1

    def release(self) -> None:
        with self._lock:
            self._in_flight -= 1

    async def run(self, fn: Callable[[CancelToken], T], http: Request | None = None) -> T:
        """`fn(token)` on a worker thread; 503 when the gate is full or the deadline passes, 400
        when the client leaves (the token is cancelled either way)."""
        token = CancelToken()

        return await self.run_on(self._pool, lambda: fn(token), http, token)

    async def run_on(
        self,
        pool: Executor,
        fn: Callable[[], T],
        http: Request | None = None,
        token: CancelToken | None = None,
    ) -> T:
        """`fn()` on another executor (a collection's own thread) under this gate's bound and
        deadline; a job still waiting there when its request is abandoned never runs."""
        self.admit()
        token = token or CancelToken()

        def job() -> T:
            token.check()  # abandoned while it waited: never run
            started = time.monotonic()
            try:
                return fn()
            finally:
                with self._lock:
                    self.job_time.observe(1, time.monotonic() - started)

        try:
            future: Future[T] = pool.submit(carry(job, "queue_wait"))
        except BaseException:
            self.release()
            raise
        future.add_done_callback(lambda _: self.release())
        return await self.wait(future, token, http)

    async def wait(self, future: Future[T], token: CancelToken, http: Request | None) -> T:
        """The future's result within the deadline, cancelling `token` if the request is abandoned."""
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        try:
            return await wait_for_client(future, http, deadline)
        except BaseException:
            token.cancel()
            raise

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
