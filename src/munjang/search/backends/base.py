"""The storage contract and its vocabulary: what a collection needs from where it lives.

Six Protocols, each checked by mypy against every implementation (and by
`tests/search/test_storage_contract.py`):
- `Store`: documents (one row per passage), metadata, lexical tokens, the embedding cache and a
  deletion log, transactional; the source of truth every index is derived from;
- `Retriever`: one way of ranking passages, `retrieve(store, queries, k, filter)` -> the top k
  (label, score) per query, plus `stored` (what it ranks a label by, for bge-m3's score) and
  `problems` (its index against the stored passages). Each catches up with the store itself;
- `DenseSearch` and `LexicalSearch`: the two retrievers every collection has, with what their
  life beside the store needs (catch-up, saves, a dense index searching apart on a second
  connection, BM25's saved files);
- `Backend`: creates, opens, lists and drops collections in one place, hands out where their
  `Aliases` are kept, holds the one-writer lock, saves what the dense index keeps outside the
  store, tells its own errors from others, declares the retriever kinds its collections can hold
  (`retrievers`, of RETRIEVER_KINDS) and hands each out (`retriever(kind, ...)`): its own
  search, or an in-process index that replays the store (`followers/`);
- `Aliases`: names in one place that point at one of its collections, switched atomically.

A search's metadata filter reaches every retriever as one `Filter`, which carries its forms, each
made on first need: SQL for the store's dialect (`where`: PostgreSQL filters inside its query),
the labels it allows (`allowed`: an index in this process), or an engine's own filter (`native`:
Qdrant, where it keeps the SQL meaning). Each retriever runs the form it can; queries arrive as
`Queries`, encoded by the retriever's model only when it has something to search. So `Collection`
holds no backend branches and asks no retriever what it is: it gets a `Backend` from
`schemes.open_backend(location, backend)` and runs what it hands out alike. Three backends exist: a
folder with SQLite (`folder/`, the default; BM25 and the exact matrix saved beside it for readers to
map), PostgreSQL with pgvector (`postgres/`, a `postgresql://` URL: dense, BM25, SPLADE and filters
in SQL), and Qdrant (`qdrant/`, a `qdrant://` or `qdrant+local://` URL: SQLite as the record, dense,
BM25, SPLADE and ColBERT searched in Qdrant).

Adding a backend (say `lancedb://`):
1. one new package, `backends/lancedb/`, with a class satisfying `Store` (test it with the
   contract test that the existing stores pass: `tests/search/test_storage_contract.py`) and a class
   satisfying `Backend` whose `retriever` hands out the in-process followers (`followers/`: they
   replay the store) or the database's own searches, each a `Retriever` picking its filter's form;
2. one line in `backends.SCHEMES`: `"lancedb": "lancedb.backend:LanceBackend"`.
Metadata filters reach a store compiled to SQL (`filters.compile_filter`, dialects "sqlite" and
"postgres"); a store that is not SQL adds its dialect there.
The collection tests run once per backend (`tests/helpers/collection_backends.py`); add it there.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, overload, runtime_checkable

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


@dataclass(frozen=True)
class StoredRow:
    """A stored passage as a snapshot carries it: its label, the row as it was inserted, and for the
    first passage of a document stored as several, the document's whole text (`source`)."""

    label: int
    row: NewRow
    source: str | None = None


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
    def meta_value(self, key: str) -> Any: ...
    def stage_tokens(self, rows: Sequence[tuple[int, str]], restart: bool = False) -> None: ...
    def staged_through(self) -> int: ...
    def put_analysis(self, meta: dict[str, Any], staged: bool) -> None: ...
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
    def passages_after(self, after: int, batch: int = 10_000) -> Iterator[list[StoredRow]]:
        """Every passage with a label above `after`, whole (`StoredRow`), in label order, `batch`
        at a time (keyset pages: inside `snapshot()`, one consistent state)."""
        ...

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


def sparse_cache_key(model: str) -> str:
    """The key a sparse model's vectors are cached under in a store (`cached_sparse`, `put_sparse`,
    `sparse_after`, which a store keeping SPLADE vectors provides)."""
    return f"sparse:{model}"


def token_cache_key(model: str) -> str:
    """The key a multi-vector model's token matrices are cached under in a store
    (`cached_token_vectors`, `put_token_vectors`, `token_vectors_after`)."""
    return f"multi_vector:{model}"


TopK = list[list[tuple[int, float]]]  # per query, (label, score) best first


def ranked_rows(labels: np.ndarray, scores: np.ndarray) -> TopK:
    """A (queries x k) labels / scores pair as ranked lists, without the -1 padding."""
    return [
        [(int(x), float(s)) for x, s in zip(row_l, row_s, strict=True) if x >= 0]
        for row_l, row_s in zip(labels, scores, strict=True)
    ]


class Queries:
    """A search's queries and how one retriever's model encodes them (dense vectors, BM25 tokens,
    SPLADE rows, ColBERT matrices), encoded on first need: a retriever with nothing to search (an
    empty index, a filter that matches nothing) encodes nothing."""

    def __init__(self, texts: Sequence[Any], encode: Callable[[list[Any]], Any]) -> None:
        self.texts = list(texts)
        self._encode = encode
        self._encoded: Any = None
        self._done = False

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def encoded(self) -> Any:
        if not self._done:
            self._encoded, self._done = self._encode(self.texts), True
        return self._encoded

    def none(self) -> TopK:
        """No hits for any query."""
        return [[] for _ in self.texts]


class Filter:
    """A search's metadata filter (`filters.py`'s spec) with the forms retrievers run it in, each
    made on first need and then shared by every retriever of the search:
    - `where`: the SQL condition and parameters in the store's dialect, for an index that filters
      inside its database query (PostgreSQL);
    - `allowed`: the labels of the passages it matches, read from the store once, for an index in
      this process (the folder backend's, the fallbacks);
    - `native(engine, compile)`: the filter compiled for a search engine's own filter language
      (Qdrant), or None where that cannot keep exactly the SQL meaning (the retriever then runs
      `allowed`).
    Each retriever picks the form it can run: the collection never asks which."""

    def __init__(
        self, spec: Mapping[str, Any], store: Store, compile: Callable[..., tuple[str, list[Any]]]
    ) -> None:
        """`compile(spec, dialect=...)`: the SQL compiler (`filters.compile_filter`)."""
        self.spec, self.store, self._compile = spec, store, compile
        self._lock = threading.Lock()
        self._where: tuple[str, list[Any]] | None = None
        self._allowed: np.ndarray | None = None
        self._natives: dict[str, Any] = {}

    @property
    def where(self) -> tuple[str, list[Any]]:
        with self._lock:
            if self._where is None:
                self._where = self._compile(self.spec, dialect=self.store.dialect)
            return self._where

    @property
    def allowed(self) -> np.ndarray:
        where = self.where
        with self._lock:
            if self._allowed is None:
                self._allowed = self.store.labels_matching(*where)
            return self._allowed

    def native(self, engine: str, compile: Callable[[Mapping[str, Any]], Any]) -> Any | None:
        """The filter in `engine`'s own language, `compile(spec)` once per engine (None: it cannot)."""
        with self._lock:
            if engine not in self._natives:
                self._natives[engine] = compile(self.spec)
            return self._natives[engine]


class Retriever(Protocol):
    """One way of ranking a collection's passages (dense, BM25, SPLADE, ColBERT), answered by the
    backend's own engine or by an in-process index following the store (`followers/`); each
    catches up with the store itself before it answers. A backend hands them out by kind
    (`Backend.retriever`); the collection runs them alike and fuses what they return."""

    def retrieve(self, store: Any, queries: Queries, k: int, filter: Filter | None) -> TopK:
        """The top-k (label, score) per query, best first, among the passages `filter` matches."""
        ...

    def stored(self, store: Any, labels: Sequence[int]) -> list[Any]:
        """What it ranks each label by (a dense vector, BM25 tokens, SPLADE {token id: weight}, a
        ColBERT matrix or None where not held): bge-m3's score reads its candidates' vectors."""
        ...

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        """Disagreement between the index, caught up, and the stored passages' `labels`."""
        ...


class LexicalSearch(Retriever, Protocol):
    """A collection's BM25: in process (`followers/lexical.py`, optionally saved in files the
    writer keeps current) or the backend's own. `incremental`: a commit's catch-up costs what it
    added (the writer then keeps it current, once `ready`: built)."""

    incremental: bool

    @property
    def ready(self) -> bool: ...
    def sync(self, store: Any, wait: bool = False) -> bool: ...
    def save_files(self, store: Any, least: int = 1) -> None:
        """Bring its saved files up to the store, once at least `least` passages and deletions are
        unsaved (a new reader maps them); nothing where it keeps none."""
        ...


class DenseSearch(Retriever, Protocol):
    """A collection's vector index. `index` answers `ids()`, `memory_bytes()`, `len` and truth
    (anything stored?). `persistent`: it keeps state outside the store that `Backend.save_dense`
    writes."""

    kind: str
    watermark: Watermark
    saved: Watermark
    index: Any

    @property
    def persistent(self) -> bool: ...

    def sync(self, store: Any) -> bool: ...
    def tail_due(self) -> bool:
        """Whether what was added since the last whole save is due to be saved as a tail
        (`dense_tail.py`, so a new reader maps it); False where it keeps no such file."""
        ...

    def apart(self) -> DenseSearch | None:
        """The index on a connection of its own (a database's), holding nothing in process, for a
        hybrid search to run it on a second thread while the other retrievers run on this one (the
        waits overlap); None where it cannot, or must not now."""
        ...


# What a backend can hand out (`Backend.retrievers`): "dense" and "lexical" always; the extra
# retrievers' kinds where its collections keep their vectors, and "m3" for bge-m3's three heads.
RETRIEVER_KINDS = ("dense", "lexical", "sparse", "multi_vector", "m3")


class Backend(Protocol):
    """Where one collection lives, and how to reach it."""

    location: str  # shown in messages and info()["folder"]
    retrievers: frozenset[str]  # the kinds of RETRIEVER_KINDS its collections can hold

    @property
    def kind(self) -> str:
        """ "embedded", "postgres", ...: info()["backend"]."""
        ...

    @property
    def folder(self) -> Path | None:
        """The collection's folder, for backends that keep one."""
        ...

    @staticmethod
    def names(where: Any) -> list[str]:
        """The collections in `where` (a folder of collection folders, or the database's URL)."""
        ...

    @staticmethod
    def is_error(error: BaseException) -> bool:
        """Whether `error` came from this backend's database driver (a server refused or went away)."""
        ...

    @staticmethod
    def aliases(where: Any) -> Aliases:
        """Where the aliases of the collections in `where` (as for `names`) are kept (`aliases.py`)."""
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

    @overload
    def retriever(
        self, kind: Literal["dense"], store: Store, config: dict[str, Any], background: bool = False
    ) -> DenseSearch: ...
    @overload
    def retriever(
        self, kind: Literal["lexical"], store: Store, config: dict[str, Any], background: bool = False
    ) -> LexicalSearch: ...
    @overload
    def retriever(
        self, kind: str, store: Store, config: dict[str, Any], background: bool = False
    ) -> Retriever: ...
    def retriever(self, kind: str, store: Store, config: dict[str, Any], background: bool = False) -> Any:
        """The collection's retriever of `kind` ("dense": the vector index, loaded and ready to
        `sync`; "lexical", "sparse", "multi_vector"), searched by the backend itself or by an
        in-process index following the store; `config` is the collection's configuration.
        `background`: BM25 rebuilt in process after a change runs on a background thread (a
        server's readers). `CollectionError` for a kind not in `retrievers`."""
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


class Aliases(Protocol):
    """Where a place's aliases are kept: names that point at one of its collections (alias ->
    collection name, plain names in that place: a folder of collections, a database, Qdrant's
    records folder). Each backend hands out its own (`Backend.aliases`): a checksummed file renamed
    into place (`folder/aliases.py`, for folders and Qdrant), rows changed in one transaction
    (`postgres/aliases.py`). All switch atomically (a reader sees the old target or the new one),
    refuse an alias of a collection's name, and let a collection made later win over an alias."""

    def read(self) -> dict[str, str]:
        """Every alias and the collection it points at now; {} where there are none."""
        ...

    def set(self, alias: str, target: str) -> str | None:
        """Point `alias` at the collection `target`, atomically; the collection it pointed at before
        (None: a new alias). `CollectionError` when `alias` is a collection's name,
        `CollectionNotFoundError` when `target` is none."""
        ...

    def remove(self, alias: str) -> bool:
        """Remove `alias` (its collection is kept); False where there was none."""
        ...

    def resolve(self, name: str) -> str:
        """The collection `name` opens: itself when it is a collection or no alias, else the
        collection the alias points at now."""
        ...


def check_alias_names(where: str, alias: str, target: str) -> None:
    """Refuse an alias or target that is not one plain name (a path, a hidden name, empty)."""
    for word in (alias, target):
        if not word or "/" in word or word.startswith("."):
            raise CollectionError(f"{word!r}: an alias and its target are names in {where}, not paths")


def unsupported(backend: Backend, kind: str) -> CollectionError:
    """The error for a retriever `kind` a backend's collections cannot hold."""
    return CollectionError(
        f"{backend.location}: a {backend.kind} collection keeps no {kind} vectors (use a folder collection)"
    )
