"""A served collection's writes leave a core to its reads: the writer encodes with one torch
thread fewer than the process has, a read beside it with all of them, and both are restored."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

import torch

from munjang.server.collections_api import ServedCollection


class Stub:
    """Stands in for a Collection: records the torch thread count each call ran with."""

    def __init__(self) -> None:
        self.lexical = SimpleNamespace(bm25=None)
        self.seen: dict[str, int] = {}

    def warm_up(self) -> None:
        self.seen["warm_up"] = torch.get_num_threads()

    def close(self) -> None:
        pass


def test_a_write_encodes_with_a_core_fewer_and_a_read_beside_it_with_all() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        writer, twin = Stub(), Stub()
        served = ServedCollection(lambda: writer, lambda _: twin)  # type: ignore[arg-type,return-value]
        started, release = threading.Event(), threading.Event()

        def write() -> None:
            writer.seen["write"] = torch.get_num_threads()
            started.set()
            release.wait(10)

        async def scenario() -> None:
            pending = asyncio.ensure_future(served.call(write))
            await asyncio.to_thread(started.wait, 10)
            seen: Any = await served.read(lambda c: torch.get_num_threads())
            twin.seen["read"] = seen
            release.set()
            await pending
            writer.seen["read after"] = await served.read(lambda c: torch.get_num_threads())

        asyncio.run(scenario())
        served.close()
        assert writer.seen["write"] == 2
        assert twin.seen["read"] == 3
        assert writer.seen["read after"] == 3, "the writer's thread is given its cores back after a write"
    finally:
        torch.set_num_threads(before)
