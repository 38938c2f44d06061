"""Where a collection lives: the storage contract, and the one factory that picks a backend.

A backend is three parts, each a Protocol below:
- a `Store`: documents (one row per passage), metadata, lexical tokens, the embedding cache and a
  deletion log, transactional; the source of truth every index is derived from;
- a `DenseSearch`: the vector index kept in step with the store (`sync`) and searched by
  `Collection`; an in-memory one (`live_index.DenseIndex`) replays the store's `vectors_after` and
  `deletions_after`, a database-side one (`postgres_dense.PostgresDense`) needs no replay;
- a `Backend`: creates, opens and lists collections in one place, holds the one-writer lock, saves
  what the dense index keeps outside the store, and tells its own errors from others.

`Collection` holds no backend branches: it asks `open_backend(location, backend)` for a `Backend`
and talks to these three parts only. Two backends exist: a folder with SQLite
(`folder_backend.py`, the default) and PostgreSQL with pgvector (`postgres_backend.py`, chosen by a
`postgresql://` URL).

Adding a third backend (say `lancedb://`):
1. one new module, `search/lancedb_backend.py`, with a class satisfying `Store` (test it with the
   contract test that both existing stores pass: `tests/search/test_storage_contract.py`) and a class
   satisfying `Backend` whose `dense_index` returns the in-memory `DenseIndex` (it replays the
   store) or the database's own vector search;
2. one line in `SCHEMES` below: `"lancedb": "lancedb_backend:LanceBackend"`.
Metadata filters reach a store compiled to SQL (`filters.compile_filter`, dialects "sqlite" and
"postgres"); a store that is not SQL adds its dialect there.
The collection tests run once per backend (`tests/helpers/collection_backends.py`); add it there.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

import numpy as np

from .store import Document, NewRow, Watermark

# URL scheme -> "module:class" under munjang.search; imported on first use (drivers are optional).
SCHEMES = {
    "postgresql": "postgres_backend:PostgresBackend",
    "postgres": "postgres_backend:PostgresBackend",
}


@runtime_checkable
class Store(Protocol):
    """A collection's document store. Labels are integers, increasing, never reused; every index
    refers to passages by label. Writes happen inside `transaction()`."""

    @property
    def dialect(self) -> str:
        """The SQL dialect metadata filters compile to (`filters.compile_filter`)."""
        ...

    def close(self) -> None: ...
    def get_meta(self) -> dict[str, Any]: ...
    def set_meta(self, values: dict[str, Any]) -> None: ...
    def transaction(self) -> AbstractContextManager[Any]: ...
    def snapshot(self) -> AbstractContextManager[None]: ...
    def count(self) -> int: ...
    def passage_count(self) -> int: ...
    def has_passages(self) -> bool: ...
    def has_documents(self) -> bool: ...
    def watermark(self) -> Watermark: ...
    def existing(self, ids: Sequence[str]) -> dict[str, tuple[int, str]]: ...
    def cached_hashes(self, model: str, hashes: Iterable[str]) -> set[str]: ...
    def documents(self, labels: Sequence[int]) -> dict[int, Document]: ...
    def documents_by_id(self, ids: Sequence[str]) -> dict[str, Document]: ...
    def iter_ids(self, batch: int = 10_000) -> Iterator[str]: ...
    def labels_matching(self, where: str, params: Sequence[Any]) -> np.ndarray: ...
    def count_matching(self, where: str, params: Sequence[Any]) -> int: ...
    def vectors_after(
        self, model: str, dim: int, after: int, batch: int = 20_000
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]: ...
    def vectors_of(self, model: str, dim: int, labels: np.ndarray) -> np.ndarray: ...
    def tokens_of(self, labels: Sequence[int]) -> dict[int, list[str]]: ...
    def tokens(self, after: int = 0) -> tuple[np.ndarray, list[str], list[list[str]]]: ...
    def deletions_after(self, seq: int) -> np.ndarray: ...
    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None: ...
    def insert(self, rows: Sequence[NewRow], model: str) -> None: ...
    def put_sources(self, sources: Sequence[tuple[str, str]]) -> None: ...
    def update_metadata(self, updates: Sequence[tuple[str, str]]) -> None: ...
    def delete(self, ids: Sequence[str]) -> int: ...
    def prune_embeddings(self, model: str) -> int: ...
    def integrity_problems(self, model: str) -> list[str]: ...


class DenseSearch(Protocol):
    """A collection's vector index. `index` answers `ids()`, `memory_bytes()`, `len` and truth
    (anything stored?). `persistent`: it keeps state outside the store that `Backend.save_dense`
    writes; `sql_filters`: it filters by the compiled SQL condition itself (no allowed-labels list)."""

    kind: str
    watermark: Watermark
    saved: Watermark
    index: Any

    @property
    def persistent(self) -> bool: ...
    @property
    def sql_filters(self) -> bool: ...

    def sync(self, store: Any) -> bool: ...
    def search(
        self, store: Any, vectors: np.ndarray, k: int, allowed: np.ndarray | None, where: Any = None
    ) -> tuple[np.ndarray, np.ndarray]: ...


class Backend(Protocol):
    """Where one collection lives, and how to reach it."""

    location: str  # shown in messages and info()["folder"]

    @property
    def kind(self) -> str:
        """ "embedded", "postgres", ...: info()["backend"]."""
        ...

    @property
    def folder(self) -> Path | None:
        """The collection's folder, for backends that keep one."""
        ...

    def create(self, config: dict[str, Any]) -> None:
        """Make the empty collection with this configuration, completely or not at all; an error
        if it exists."""
        ...

    def open_store(self, readonly: bool) -> Store:
        """The store of an existing collection (an error naming the location if there is none)."""
        ...

    def writable(self) -> bool:
        """False where the collection cannot be changed (a folder on read-only media): it is then
        opened read-only, and writes are refused with one clear error."""
        ...

    def reader(self) -> Callable[[], Store]:
        """Opens another read-only store on the same collection (for work on other threads)."""
        ...

    def dense_index(self, store: Store, config: dict[str, Any]) -> DenseSearch:
        """The collection's vector index, loaded and ready to `sync`."""
        ...

    def write_lock(self, store: Store, timeout: float) -> AbstractContextManager[None]:
        """One writer at a time across processes; readers never take it."""
        ...

    def save_dense(self, dense: DenseSearch) -> None:
        """Write what a `persistent` dense index keeps outside the store."""
        ...

    def size_bytes(self, store: Store) -> int:
        """Bytes the collection's data takes where it lives."""
        ...


def _backend_class(scheme: str) -> Any:
    module, _, name = SCHEMES[scheme].partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def _scheme(url: str) -> str:
    scheme = urlsplit(url).scheme
    if scheme not in SCHEMES:
        known = " or ".join(f"{s}://" for s in sorted(SCHEMES))
        raise ValueError(f"backend must be a {known} URL; got {url!r}")
    return scheme


def open_backend(location: str | os.PathLike[str], backend: str | None = None) -> Backend:
    """The backend for a collection: a folder when `backend` is None, else the collection named
    `location` in the database at the URL `backend`."""
    if backend is None:
        from .folder_backend import FolderBackend

        return FolderBackend(Path(location))
    if not isinstance(backend, str):
        raise ValueError(f"backend must be a URL string, got {type(backend).__name__}")
    backend_class: Any = _backend_class(_scheme(backend))
    result: Backend = backend_class(backend, str(location))
    return result


def collection_names(where: str | os.PathLike[str]) -> list[str]:
    """The collections in a folder of collection folders, or in the database at a URL."""
    if isinstance(where, str) and urlsplit(where).scheme in SCHEMES:
        names: list[str] = _backend_class(urlsplit(where).scheme).names(where)
        return names
    from .folder_backend import FolderBackend

    return FolderBackend.names(Path(where))


def is_storage_error(error: BaseException) -> bool:
    """True for an error raised by a backend's database driver (a server refused or went away),
    which callers report as such instead of as a bug."""
    classes = {_backend_class(scheme) for scheme in SCHEMES}
    return any(cls.is_error(error) for cls in classes)
