"""Bounded work off the event loop, for every route that computes outside the embeddings batcher
(rerank, tokenize, map, similarity on whole-text models).

The same three bounds as `/v1/embeddings`:
- **a queue bound**: at most `workers` jobs run and `max_queued` wait; past that a request is
  refused at once with 503 and Retry-After, so waiting work never grows past what clears in a
  bounded time;
- **the request deadline**: a request still unanswered after `request_timeout_s` is answered 503;
- **cancellation**: when the deadline passes or the client leaves, a job not yet started never
  runs, and a running one stops at its next step (work that loops checks its `CancelToken`).

A job counts against the bound until it has really stopped, not when its client left, so a burst
of abandoned requests cannot pile up work behind the bound.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import TypeVar

from starlette.requests import Request

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


class ComputeGate:
    """Runs jobs on `workers` threads with at most `max_queued` waiting (see the module docstring)."""

    def __init__(self, workers: int, max_queued: int, timeout_s: float) -> None:
        if workers < 1 or max_queued < 0:
            raise ValueError("workers must be at least 1 and max_queued at least 0")
        self.limit = workers + max_queued
        self.timeout_s = timeout_s
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="munjang-compute")
        self._lock = threading.Lock()
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        """Jobs running or waiting."""
        with self._lock:
            return self._in_flight

    def admit(self) -> None:
        """Count one more job, or 503 with Retry-After when the bound is reached."""
        with self._lock:
            if self._in_flight >= self.limit:
                message = f"the server is busy ({self._in_flight} requests computing or waiting)"
                raise APIError(503, message, None, "queue_full", retry_after())
            self._in_flight += 1

    def release(self) -> None:
        with self._lock:
            self._in_flight -= 1

    async def run(self, fn: Callable[[CancelToken], T], http: Request | None = None) -> T:
        """`fn(token)` on a worker thread; 503 when the gate is full or the deadline passes, 400
        when the client leaves (the token is cancelled either way)."""
        token = CancelToken()

        def job() -> T:
            token.check()
            return fn(token)

        return await self.run_on(self._pool, job, http, token)

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
        try:
            future: Future[T] = pool.submit(fn)
        except BaseException:
            self.release()
            raise
        future.add_done_callback(lambda _: self.release())
        return await self.wait(future, token or CancelToken(), http)

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
