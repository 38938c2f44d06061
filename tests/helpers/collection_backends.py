"""Where a test collection lives: a folder (the embedded backend), a schema in PostgreSQL, or Qdrant's
local mode (`qdrant_url`). The collection tests run once per backend with the same assertions."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from munjang.search.collection.collection import Collection

_counter = itertools.count()


@dataclass
class Backend:
    kind: str  # "embedded", "postgres" or "qdrant"
    tmp_path: Path
    url: str | None = None

    def __post_init__(self) -> None:
        self.prefix = f"t{os.getpid()}_{next(_counter)}"

    def location(self, name: str) -> Any:
        return self.tmp_path / name if self.url is None else f"{self.prefix}_{name}"

    def create(self, name: str, **kwargs: Any) -> Collection:
        return Collection.create(self.location(name), backend=self.url, **kwargs)

    def open(self, name: str, **kwargs: Any) -> Collection:
        return Collection.open(self.location(name), backend=self.url, **kwargs)


def fresh_database(url: str) -> str:
    """A new, empty database on the server at `url` (for tests that list every collection)."""
    import psycopg

    name = f"db_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def qdrant_url(tmp_path: Path) -> str:
    """A Qdrant backend in qdrant-client's local mode (the real engine, embedded) under `tmp_path`."""
    pytest.importorskip("qdrant_client")
    return f"qdrant+local://{tmp_path / 'qdrant-collections'}"
