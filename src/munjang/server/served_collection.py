"""A served collection: its writer thread, its read-only twin for searches during writes, and the
bounded, deadline-kept way every route calls into it (`collections_api.py` holds the routes)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fastapi import Request

from .._util.tracing import carry
from ..inference.hardware import torch_threads
from ..search import CollectionError, CollectionNotFoundError, ReadOnlyError, StorageFullError
from ..search.collection.collection import Collection
from .compute import ComputeGate
from .errors import APIError


class ServedCollection:
    """A served collection: writes (add, delete) run one at a time on the writer's thread; reads
    (search, info, map) run there too while no write is in flight, and otherwise on a read-only twin
    opened on the same storage with the same encoder, on a thread of its own. SQLite's WAL (and
    PostgreSQL's MVCC) let the twin see each chunk the writer commits, so a long add never holds a
    search up. The twin is opened on the first read that meets a write and kept (it holds its own
    copy of the dense index), and rebuilds BM25 in the background. After a write, the writer brings
    its own BM25 up to date (if it has one) before reads come back to it, so no read pays for it.

    Reads come first: before each batch of a write's work (`Collection.pace`), the writer waits
    while a search is in flight (at most `MAX_PAUSE_S`), and while searches are coming (one in the
    last `READ_WINDOW_S`) encodes with one torch thread fewer than the process has, so a search
    finds a core free; alone, a write uses them all. torch keeps the thread count per thread, so
    reads set theirs.

    `deferred=True` opens the collection on the writer's thread without waiting (a collection built
    on first use, such as the demo, while the server already answers): routes `await ready()` before
    using it, and a collection that fails to open answers 503 naming why.

    `where` (location, backend URL) is where the collection lives, for DELETE (`drop_api.py`); once
    `dropped` is set, each request still queued for it answers 404 instead of touching it."""

    READ_WINDOW_S = 2.0
    MAX_PAUSE_S = 0.25

    def __init__(
        self,
        open_collection: Callable[[], Collection],
        open_twin: Callable[[Collection], Collection] | None = None,
        deferred: bool = False,
        where: tuple[Path | str, str | None] | None = None,
    ) -> None:
        self.where = where
        self.dropped = False
        self._writes = ThreadPoolExecutor(max_workers=1, thread_name_prefix="munjang-collection")
        self._reads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="munjang-collection-read")
        self._open_twin = open_twin
        self._twin: Collection | None = None
        self.writing = 0
        import torch

        self._threads = torch.get_num_threads()
        self._reads_in_flight = 0
        self._last_read = -float("inf")
        self._reads_done = threading.Condition()
        self._opened = self._writes.submit(self._open, open_collection)
        if not deferred:
            try:
                self._opened.result()
            except BaseException:
                self._writes.shutdown(wait=False)
                self._reads.shutdown(wait=False)
                raise

    def _open(self, open_collection: Callable[[], Collection]) -> Collection:
        collection = open_collection()
        collection.pace = self._pace
        collection.warm_up()
        return collection

    @property
    def collection(self) -> Collection:
        """The open collection (waits while a deferred one is still opening)."""
        return self._opened.result()

    async def ready(self) -> ServedCollection:
        """This collection once it is open (a deferred one may still be building); 503 if it failed."""
        if not self._opened.done():
            await asyncio.wait([asyncio.wrap_future(self._opened)])
        error = self._opened.exception()
        if error is not None:
            raise APIError(503, f"this collection could not be opened: {error}") from error
        return self

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A write: run `fn` on the writer's thread; bad requests become 400s naming the problem."""
        self.writing += 1
        try:
            result = await self._run(self._writes, self._unless_dropped(fn), *args, **kwargs)
            await self._run(self._writes, self._unless_dropped(self._catch_up))
            return result
        finally:
            self.writing -= 1

    def _pace(self) -> int | None:
        """Called by the writer before each batch: wait for searches in flight, then the torch
        threads for the batch (None: all, when no search came lately)."""
        with self._reads_done:
            self._reads_done.wait_for(lambda: not self._reads_in_flight, timeout=self.MAX_PAUSE_S)
        recent = self._reads_in_flight or time.monotonic() - self._last_read < self.READ_WINDOW_S
        return max(1, self._threads - 1) if recent else None

    def _as_read(self, fn: Callable[[], Any]) -> Any:
        with torch_threads(self._threads):
            return fn()

    def _catch_up(self) -> None:
        lexical = self.collection.lexical
        if lexical.ready:
            lexical.sync(self.collection.store)

    async def read(
        self, fn: Callable[[Collection], Any], gate: ComputeGate | None = None, http: Request | None = None
    ) -> Any:
        """A read: `fn(collection)` on the writer while it is idle, else on the read-only twin. With
        `gate`, under its queue bound and deadline; with `http` too, dropped if its client leaves."""
        with self._reads_done:
            self._reads_in_flight += 1
        try:
            if not self.writing or self._open_twin is None:
                writer = self._unless_dropped(lambda: fn(self.collection))
                return await self._run(self._writes, writer, gate=gate, http=http)
            twin = self._unless_dropped(lambda: self._as_read(lambda: fn(self._twin_collection())))
            return await self._run(self._reads, twin, gate=gate, http=http)
        finally:
            with self._reads_done:
                self._reads_in_flight -= 1
                self._last_read = time.monotonic()
                self._reads_done.notify_all()

    def _unless_dropped(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn`, answering 404 instead once the collection is dropped: checked here, before it is
        queued (the threads are gone after the drop), and on the thread, for work queued before."""

        def check() -> None:
            if self.dropped:
                raise APIError(404, "this collection has been dropped", None, "collection_dropped")

        def run(*args: Any, **kwargs: Any) -> Any:
            check()
            return fn(*args, **kwargs)

        check()
        return run

    def _close_twin(self) -> None:
        if self._twin is not None:
            self._twin.close()

    def _twin_collection(self) -> Collection:
        if self._twin is None:
            assert self._open_twin is not None
            self._twin = self._open_twin(self.collection)
        return self._twin

    @staticmethod
    async def _run(
        pool: ThreadPoolExecutor,
        fn: Callable[..., Any],
        *args: Any,
        gate: ComputeGate | None = None,
        http: Request | None = None,
        **kwargs: Any,
    ) -> Any:
        try:
            if gate is not None:
                return await gate.run_on(pool, lambda: fn(*args, **kwargs), http)
            return await asyncio.wrap_future(pool.submit(carry(fn, "queue_wait"), *args, **kwargs))
        except StorageFullError as e:
            raise APIError(507, str(e), None, "disk_full") from e
        except ReadOnlyError as e:
            raise APIError(409, str(e), None, "read_only") from e
        except CollectionNotFoundError as e:  # dropped by another process since it was opened
            raise APIError(404, str(e), None, "collection_dropped") from e
        except (CollectionError, ValueError, TypeError) as e:
            raise APIError(400, str(e)) from e
        except Exception as e:
            if Collection.is_storage_error(e):
                raise APIError(503, f"the collection's database failed: {str(e).strip()}") from e
            raise

    def close(self) -> None:
        """Close the twin and the collection on their threads, after the work queued there; a
        dropped one saves nothing (nor waits for a writer lock held elsewhere to do so)."""
        self._reads.submit(self._close_twin).result()
        self._reads.shutdown(wait=True)
        if self._opened.exception() is None:
            close = (lambda: self.collection.close(save=False)) if self.dropped else self.collection.close
            self._writes.submit(close).result()
        self._writes.shutdown(wait=True)
