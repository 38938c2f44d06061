"""The storage contract and its vocabulary: what a collection needs from where it lives.

A backend is three parts, each a Protocol below:
- a `Store`: documents (one row per passage), metadata, lexical tokens, the embedding cache and a
  deletion log, transactional; the source of truth every index is derived from;
- a `DenseSearch`: the vector index kept in step with the store (`sync`) and searched by
  `Collection`; an in-memory one (`live_index.DenseIndex`) replays the store's `vectors_after` and
  `deletions_after`, a database-side one (`postgres_dense.PostgresDense`) needs no replay;
- a `Backend`: creates, opens, lists and drops collections in one place, holds the one-writer lock,
  saves what the dense index keeps outside the store, and tells its own errors from others.

Retrieval is a capability a backend may provide itself; munjang's in-process indexes, which replay
the store, are the fallback. Each capability is a Protocol checked with `isinstance`:
- `ProvidesLexical`: the backend answers BM25 itself (`lexical_index`); otherwise the collection
  keeps a `live_lexical.LexicalIndex` over the store's `LexicalTokens`;
- `KeepsLexicalFiles`: the backend has a folder where that in-process index is saved, so a new
  reader maps it and catches up from its watermark instead of reading every token back;
- `FiltersNatively` / `FiltersLexicalNatively`: the dense index / BM25 compiles metadata filters
  to its engine's own filter (Qdrant), where it can keep their meaning; else allowed labels;
- `SparseVectors` / `TokenVectors`: the store keeps SPLADE vectors / ColBERT token matrices, which
  the in-process `live_retrievers` indexes replay; a store without them refuses such a collection;
- `ProvidesSparse`: the backend answers SPLADE retrieval itself (`sparse_index`, filtered in its own
  query); otherwise the collection keeps a `live_retrievers.LiveSparseIndex` over `SparseVectors`;
  `FiltersSparseNatively`: that search takes its engine's compiled filter (Qdrant);
- `ProvidesMultiVector` / `FiltersTokensNatively`: the same for ColBERT's token matrices (`token_index`);
  `HandsBackVectors`: such a search reads back the vectors it holds (bge-m3's scoring);
- `KeepsExtraVectors`: which extra retrievers ("sparse", "multi_vector", "m3") a backend's
  collections can hold; a backend without it holds none.

`Collection` holds no backend branches: it asks `backends.open_backend(location, backend)` for a
`Backend` and talks to these parts only. Three backends exist: a folder with SQLite (`folder.py` +
`sqlite_store.py`, the default; BM25 and the exact matrix saved beside it for readers to map),
PostgreSQL with pgvector (`postgres.py`, a `postgresql://` URL: dense, BM25 and filters in SQL),
and Qdrant (`qdrant.py`, a `qdrant://` or `qdrant+local://` URL: SQLite as the record, dense,
BM25, SPLADE and ColBERT searched in Qdrant).

Adding a backend (say `lancedb://`):
1. one new module, `storage/lancedb.py`, with a class satisfying `Store` (test it with the
   contract test that the existing stores pass: `tests/search/test_storage_contract.py`) and a class
   satisfying `Backend` whose `dense_index` returns the in-memory `DenseIndex` (it replays the
   store) or the database's own vector search;
2. one line in `backends.SCHEMES`: `"lancedb": "lancedb:LanceBackend"`.
Metadata filters reach a store compiled to SQL (`filters.compile_filter`, dialects "sqlite" and
"postgres"); a store that is not SQL adds its dialect there.
The collection tests run once per backend (`tests/helpers/collection_backends.py`); add it there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ...errors import MunjangError

# The collection format: a store written by another version is refused with a hint, or upgraded.
SCHEMA_VERSION = 2


class CollectionError(MunjangError):
    """A collection folder is missing, corrupt, locked, or asked to do something it cannot."""


class StorageFullError(CollectionError):
    """The disk holding a collection is full: the write was not made, and nothing committed is lost."""


class ReadOnlyError(CollectionError):
    """A collection on read-only media (or opened read-only) was asked to change."""


class CollectionNotFoundError(CollectionError):
    """No collection of that name (or in that folder) exists where it was looked for."""


class CollectionBusyError(CollectionError):
    """The collection is in use where the request needs it free (a writer holds its lock): refused,
    nothing changed."""


def text_hash(text: str) -> str:
    """The embedding-cache key of a text (SHA-256, hex)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Document:
    """A stored document or one passage of it: the user's id, the text and metadata, the internal
    label, and for a passage its number and character span in the document (end None: to the end)."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    label: int = -1
    chunk: int = 0
    start: int = 0
    end: int | None = None


@dataclass(frozen=True)
class Watermark:
    """How far an index has caught up: the highest label added and deletion sequence applied."""

    label: int = 0
    deletion: int = 0


@dataclass(frozen=True)
class Counts:
    """How many documents a collection holds and how many passages they make, as its writes keep
    them (a document short enough for the model is one passage)."""

    documents: int
    passages: int


def counts_problems(kept: Counts, found: Counts) -> list[str]:
    """Disagreement between a collection's kept counts and the rows it holds (empty when sound)."""
    if kept == found:
        return []
    said = f"{kept.documents} documents in {kept.passages} passages"
    return [f"the kept counts say {said}; the rows hold {found.documents} in {found.passages}"]


@dataclass(frozen=True)
class NewRow:
    """A passage to insert: text, metadata JSON, the encoded text's hash, lexical tokens, and where
    it lies in its document (chunk number, span, the whole document's hash when it has several)."""

    id: str
    text: str
    metadata: str
    text_hash: str
    tokens: str
    chunk: int = 0
    start: int = 0
    end: int | None = None
    doc_hash: str | None = None


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
    def counts(self) -> Counts | None:
        """The documents and passages stored, kept by every write (constant time); None for a
        collection made before they were kept, opened read-only (its next writer counts them)."""
        ...

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
    def deletions_after(self, seq: int) -> np.ndarray: ...
    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None: ...
    def insert(self, rows: Sequence[NewRow], model: str) -> None: ...
    def put_sources(self, sources: Sequence[tuple[str, str]]) -> None: ...
    def update_metadata(self, updates: Sequence[tuple[str, str]]) -> None: ...
    def delete(self, ids: Sequence[str]) -> int: ...
    def prune_embeddings(self, model: str) -> int: ...
    def integrity_problems(self, model: str) -> list[str]: ...


@runtime_checkable
class LexicalTokens(Protocol):
    """A store that hands out its passages' lexical tokens, for an in-process BM25 index."""

    def tokens(self, after: int = 0) -> tuple[np.ndarray, list[str], list[list[str]]]:
        """(labels, token-cache keys, token lists) of the passages with label > `after`."""
        ...


@runtime_checkable
class SparseVectors(Protocol):
    """A store that keeps SPLADE vectors (token ids, weights) by text hash, for a sparse retriever."""

    def cached_sparse(self, model: str, hashes: Iterable[str]) -> set[str]: ...
    def put_sparse(
        self, model: str, hashes: Sequence[str], rows: Sequence[tuple[np.ndarray, np.ndarray]]
    ) -> None: ...
    def sparse_after(
        self, model: str, after: int, batch: int = 20_000
    ) -> Iterator[tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]]: ...


def sparse_cache_key(model: str) -> str:
    """The key a sparse model's vectors are cached under in a store (`SparseVectors`)."""
    return f"sparse:{model}"


class SparseSearch(Protocol):
    """A collection's SPLADE retrieval answered by its backend: dot-product top-k per query vector
    (token ids, weights), with the compiled metadata filter applied inside its own query."""

    def search_where(
        self, queries: Sequence[tuple[np.ndarray, np.ndarray]], k: int, where: tuple[str, list[Any]] | None
    ) -> list[list[tuple[int, float]]]: ...

    def search(
        self, queries: Sequence[tuple[np.ndarray, np.ndarray]], k: int, allowed: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]: ...

    def problems(self, labels: np.ndarray) -> list[str]: ...


@runtime_checkable
class ProvidesSparse(Protocol):
    """A backend that answers SPLADE retrieval itself (the same dot products as the in-process
    `index/sparse_index.py`). `config` is the collection's "sparse" entry ({"model", "dim"})."""

    def sparse_index(self, store: Store, config: dict[str, Any]) -> SparseSearch: ...


@runtime_checkable
class FiltersSparseNatively(Protocol):
    """A backend's SPLADE search that runs munjang's metadata filter in its own engine
    (`FiltersNatively.native_filter`) and takes it compiled as `search_native`'s `native`."""

    def native_filter(self, spec: Mapping[str, Any]) -> Any | None: ...

    def search_native(
        self, queries: Sequence[tuple[np.ndarray, np.ndarray]], k: int, native: Any
    ) -> list[list[tuple[int, float]]]: ...


class TokenSearch(Protocol):
    """A collection's multi-vector retrieval answered by its backend: top-k MaxSim (`mean`:
    MeanMaxSim) per query matrix, among `allowed` labels when given."""

    def search(
        self, queries: Sequence[np.ndarray], k: int, allowed: np.ndarray | None = None, mean: bool = False
    ) -> list[list[tuple[int, float]]]: ...

    def problems(self, labels: np.ndarray) -> list[str]: ...


@runtime_checkable
class FiltersTokensNatively(Protocol):
    """A backend's multi-vector search that takes its engine's compiled filter."""

    def native_filter(self, spec: Mapping[str, Any]) -> Any | None: ...

    def search_native(
        self, queries: Sequence[np.ndarray], k: int, native: Any, mean: bool = False
    ) -> list[list[tuple[int, float]]]: ...


@runtime_checkable
class ProvidesMultiVector(Protocol):
    """A backend that answers multi-vector (ColBERT) retrieval itself, with the in-process index's
    exact MaxSim. `config` is the collection's "multi_vector" entry ({"model", "dim", "similarity"})."""

    def token_index(self, store: Store, config: dict[str, Any]) -> TokenSearch: ...


@runtime_checkable
class HandsBackVectors(Protocol):
    """A backend's sparse or multi-vector search that hands back what it stores for given labels
    (SPLADE: {token id: weight}; ColBERT: a token matrix, None where not held), for bge-m3's score."""

    def stored(self, labels: Sequence[int]) -> list[Any]: ...


@runtime_checkable
class SavesTail(Protocol):
    """A dense index that also saves, between whole saves, what was added since the last one
    (`dense_tail.py`), so a new reader maps it instead of reading it back from the store."""

    def tail_due(self) -> bool: ...
    def save_tail(self, folder: Path) -> None: ...


@runtime_checkable
class KeepsExtraVectors(Protocol):
    """A backend whose collections can hold the vectors of extra retrievers: `keeps_vectors(name)`
    for "sparse" (SPLADE), "multi_vector" (ColBERT) and "m3" (bge-m3's three heads)."""

    def keeps_vectors(self, retriever: str) -> bool: ...


@runtime_checkable
class TokenVectors(Protocol):
    """A store that keeps ColBERT token matrices by text hash, for a multi-vector retriever."""

    def cached_token_vectors(self, model: str, hashes: Iterable[str]) -> set[str]: ...
    def put_token_vectors(
        self, model: str, hashes: Sequence[str], matrices: Sequence[np.ndarray]
    ) -> None: ...
    def token_vectors_after(
        self, model: str, after: int, batch: int = 5_000
    ) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]: ...


class LexicalSearch(Protocol):
    """A collection's BM25 retrieval, in-process (`live_lexical.LexicalIndex`) or the backend's own.
    `incremental`: a commit's catch-up costs what it added (the writer then keeps it current)."""

    incremental: bool

    @property
    def ready(self) -> bool: ...
    @property
    def labels(self) -> np.ndarray: ...
    def sync(self, store: Any, wait: bool = False) -> bool: ...
    def search(
        self, queries: Sequence[Sequence[str]], k: int, allowed: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]: ...


@runtime_checkable
class FiltersLexicalInSql(Protocol):
    """A backend's BM25 that applies the compiled metadata filter inside its own query (no list of
    allowed labels is fetched for it)."""

    def search_where(
        self, queries: Sequence[Sequence[str]], k: int, where: tuple[str, list[Any]] | None
    ) -> list[list[tuple[int, float]]]: ...


@runtime_checkable
class FiltersNatively(Protocol):
    """A dense index or BM25 search that runs munjang's metadata filter in its own engine:
    `native_filter` compiles the filter spec to that engine's filter, or gives None where it cannot
    keep exactly the meaning of the SQL filter (the collection then passes allowed labels). A dense
    index receives the compiled filter as `where`; a lexical search as `search_native`'s `native`."""

    def native_filter(self, spec: Mapping[str, Any]) -> Any | None: ...


@runtime_checkable
class FiltersLexicalNatively(FiltersNatively, Protocol):
    """A BM25 search that takes its engine's compiled filter (`FiltersNatively.native_filter`)."""

    def search_native(
        self, queries: Sequence[Sequence[str]], k: int, native: Any
    ) -> list[list[tuple[int, float]]]: ...


@runtime_checkable
class ProvidesLexical(Protocol):
    """A backend that answers BM25 itself (over the same Kiwi tokens, the same scoring); None
    where it cannot for this collection (the in-process index then serves)."""

    def lexical_index(self, store: Store, config: dict[str, Any]) -> LexicalSearch | None: ...


@runtime_checkable
class KeepsLexicalFiles(Protocol):
    """A backend with a folder where the in-process BM25 index (`live_lexical.LexicalIndex`) is
    saved by the writer and mapped by a new reader (`lexical_files.py`)."""

    def lexical_files(self) -> Path: ...


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


@runtime_checkable
class SearchesApart(Protocol):
    """A dense index that can search on a connection of its own (a database's), holding nothing in
    process: a hybrid search runs it on a second thread while the other retrievers run on this one,
    so the two waits on the database overlap and the search takes the longer, not their sum."""

    def apart(self) -> DenseSearch | None:
        """The index on its own connection, or None when it must not run apart now."""
        ...


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

    def save_dense(self, dense: DenseSearch, tail: bool = False) -> None:
        """Write what a `persistent` dense index keeps outside the store (`tail`: only what was
        added since its last whole save, where it keeps such a file)."""
        ...

    def size_bytes(self, store: Store) -> int:
        """Bytes the collection's data takes where it lives."""
        ...

    def drop(self) -> None:
        """Delete the collection and everything it holds, completely; afterwards its name is free
        for `create`. `CollectionNotFoundError` if there is none; `CollectionBusyError`, with
        nothing removed, while a writer holds its lock; anything that is not a munjang collection
        is refused, never removed. Call it with no `Store` of the collection open in this process."""
        ...
