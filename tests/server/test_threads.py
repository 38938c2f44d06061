"""A served collection's writes leave a core to its searches: while searches are coming, each batch
of a write is encoded with one torch thread fewer than the process has; alone, with all of them.
A read beside a write runs with every thread, and the encoded vectors do not change."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from munjang.search.collection.collection import Collection
from munjang.server.collections_api import ServedCollection


class Stub:
    """Stands in for a Collection: records the torch thread count a read ran with."""

    def __init__(self) -> None:
        self.lexical = SimpleNamespace(bm25=None, ready=False)
        self.pace: Any = None

    def warm_up(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_writes_give_up_a_core_only_while_searches_are_coming() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        writer, twin = Stub(), Stub()
        served = ServedCollection(lambda: writer, lambda _: twin)  # type: ignore[arg-type,return-value]
        assert writer.pace is not None, "the served collection asks the server per batch"
        started, release = threading.Event(), threading.Event()
        seen: dict[str, Any] = {"alone": writer.pace()}

        def write() -> None:
            started.set()
            release.wait(10)
            seen["after a search"] = writer.pace()

        async def scenario() -> None:
            pending = asyncio.ensure_future(served.call(write))
            await asyncio.to_thread(started.wait, 10)
            seen["read beside a write"] = await served.read(lambda c: torch.get_num_threads())
            release.set()
            await pending

        asyncio.run(scenario())
        served._last_read -= served.READ_WINDOW_S
        seen["searches stopped"] = writer.pace()
        served.close()
        assert seen == {
            "alone": None,
            "read beside a write": 3,
            "after a search": 2,
            "searches stopped": None,
        }
    finally:
        torch.set_num_threads(before)


def test_a_write_with_the_threads_hook_stores_the_same_vectors(tmp_path: Path, encoder) -> None:
    texts = [
        ("짧은 문장" if i % 3 else "a much longer sentence about the weather " * (i % 7 + 1)) + str(i)
        for i in range(23)
    ]
    plain = Collection.create(tmp_path / "plain", encoder=encoder)
    hooked = Collection.create(tmp_path / "hooked", encoder=encoder)
    counts: list[int] = []

    def one_thread() -> int:
        counts.append(torch.get_num_threads())
        return 1

    hooked.pace = one_thread
    ids = [str(i) for i in range(len(texts))]
    plain.add(ids, texts, batch_size=4)
    hooked.add(ids, texts, batch_size=4)
    assert len(counts) == 6 + 1, "asked once per encoding batch of four and once to tokenize"
    dim = plain.config["dim"]
    labels = np.arange(1, len(texts) + 1)
    a = plain.store.vectors_of(plain.config["model"], dim, labels)
    b = hooked.store.vectors_of(hooked.config["model"], dim, labels)
    np.testing.assert_allclose(a, b, atol=1e-5)
    assert torch.get_num_threads() == counts[0], "the thread count is restored after each batch"


def test_a_write_waits_for_a_search_in_flight_before_its_next_batch() -> None:
    writer, twin = Stub(), Stub()
    served = ServedCollection(lambda: writer, lambda _: twin)  # type: ignore[arg-type,return-value]
    writing, reading, release_read, release_write = (threading.Event() for _ in range(4))
    waited: list[float] = []

    def write() -> None:
        writing.set()
        reading.wait(10)
        started = time.perf_counter()
        writer.pace()
        waited.append(time.perf_counter() - started)
        release_write.wait(10)

    def slow_read(collection: Any) -> None:
        reading.set()
        release_read.wait(10)

    async def scenario() -> None:
        pending = asyncio.ensure_future(served.call(write))
        await asyncio.to_thread(writing.wait, 10)
        search = asyncio.ensure_future(served.read(slow_read))
        await asyncio.sleep(0.1)
        release_read.set()
        await search
        release_write.set()
        await pending

    asyncio.run(scenario())
    served.close()
    assert 0.05 < waited[0] < served.MAX_PAUSE_S, f"the writer paused {waited[0]:.3f} s"
