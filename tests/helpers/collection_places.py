"""Where the drop tests' collections live (a folder of collection folders, a fresh PostgreSQL
database, Qdrant's local mode), and another process holding a collection's writer lock."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from munjang.search.collection.collection import Collection
from tests.helpers.collection_backends import fresh_database, qdrant_url
from tests.helpers.paths import SCRIPTS


class Place:
    """Where the test's collections live: `where` is what `Collection.names` lists."""

    def __init__(self, kind: str, tmp_path: Path, request: pytest.FixtureRequest | None) -> None:
        self.kind = kind
        self.url: str | None = None
        self.where: str | Path = tmp_path / "collections"
        if kind == "qdrant":
            self.url = self.where = qdrant_url(tmp_path)
        elif kind == "postgres":
            assert request is not None
            self.url = self.where = fresh_database(request.getfixturevalue("postgres_url"))
        else:
            self.where.mkdir()  # type: ignore[union-attr]

    def location(self, name: str) -> str | Path:
        return name if self.url is not None else Path(self.where) / name

    def create(self, name: str, encoder: Any) -> Collection:
        return Collection.create(self.location(name), backend=self.url, encoder=encoder, tokenizer="word")

    def open(self, name: str, encoder: Any) -> Collection:
        return Collection.open(self.location(name), backend=self.url, encoder=encoder)

    def drop(self, name: str) -> None:
        Collection.drop(self.location(name), backend=self.url)

    def names(self) -> list[str]:
        return Collection.names(self.where)


@contextmanager
def writer_holding_the_lock(place: Place, name: str) -> Iterator[None]:
    """Another process holding the collection's writer lock until the block ends."""
    args = [sys.executable, str(SCRIPTS / "hold_write_lock.py"), str(place.location(name))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        args + ([place.url] if place.url else []),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "locked", proc.stderr.read() if proc.stderr else line
        yield
    finally:
        proc.communicate("", timeout=60)
