"""The PostgreSQL backend: a collection is one schema in a database with pgvector, chosen by a
`postgresql://` URL. The store (`postgres_store.py`) holds the vectors beside the passages, and
pgvector searches them (`postgres_dense.py`); BM25 is scored in SQL over postings kept beside them
(`postgres_lexical.py`), and so is SPLADE's dot product (`postgres_sparse.py`), so a process holds
nothing per passage; one writer at a time holds an advisory lock. Dropping a collection drops its
schema, tables and postings together, in one transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...followers.lexical import LexicalIndex
from ..base import CollectionBusyError, CollectionNotFoundError, sparse_cache_key, unsupported
from .aliases import PostgresAliases
from .connect import is_database_error, list_collections
from .dense import PostgresDense
from .lexical import PostgresLexical, served_in_sql
from .sparse import PostgresSparse
from .store import PostgresStore

# How long a drop waits for sessions still reading the collection's tables before it gives up.
DROP_LOCK_TIMEOUT = "10s"


class PostgresBackend:
    """The collection `name` in the database at `url`."""

    kind = "postgres"
    folder: Path | None = None

    def __init__(self, url: str, name: str) -> None:
        self.url, self.name = url, name
        self.location = name

    retrievers = frozenset({"dense", "lexical", "sparse"})  # no token vectors yet

    @staticmethod
    def names(where: str) -> list[str]:
        """The collections in the database at the URL `where`."""
        return list_collections(where)

    @staticmethod
    def is_error(error: BaseException) -> bool:
        """An error from psycopg (the server refused or went away)."""
        return is_database_error(error)

    @staticmethod
    def aliases(where: str) -> PostgresAliases:
        """The aliases of the database at the URL `where`, rows of its `munjang.aliases` table."""
        return PostgresAliases(where)

    def create(self, config: dict[str, Any]) -> None:
        store = PostgresStore(self.url, self.name)
        try:
            store.create_schema(config)
        finally:
            store.close()

    def writable(self) -> bool:
        return True  # a database refuses writes itself, with its own error

    def open_store(self, readonly: bool) -> PostgresStore:
        store = PostgresStore(self.url, self.name, readonly=readonly)
        try:
            store.check_schema()
        except BaseException:
            store.close()
            raise
        self.location = str(store.path)
        return store

    def reader(self) -> Callable[[], PostgresStore]:
        return lambda: PostgresStore(self.url, self.name, readonly=True)

    def retriever(self, kind: str, store: Any, config: dict[str, Any], background: bool = False) -> Any:
        """pgvector's dense search, and BM25 and SPLADE in SQL over the postings the store keeps;
        BM25 in process (following the store) for the methods that need every document (bm25l,
        bm25+) and for a collection not yet given its postings (opened read-only before any
        writable open)."""
        if kind == "dense":
            return PostgresDense(store, config)
        if kind == "lexical":
            lexical = config["lexical"]
            if served_in_sql(lexical) and store.has_postings():
                return PostgresLexical(store, lexical)
            return LexicalIndex(lexical, self.reader() if background else None)
        if kind == "sparse":
            return PostgresSparse(store, sparse_cache_key(str(config["sparse"]["model"])))
        raise unsupported(self, kind)

    @contextmanager
    def write_lock(self, store: Any, timeout: float) -> Iterator[None]:
        with store.write_lock(timeout):
            yield

    def save_dense(self, dense: Any, tail: bool = False) -> None:
        """pgvector keeps its own index: nothing to write."""

    def size_bytes(self, store: Any) -> int:
        return int(store.database_bytes())

    def drop(self) -> None:
        """Drop the collection's schema (every table: passages, vectors, the embedding cache, BM25's
        postings) in one transaction, refused while a writer holds its advisory lock; a session
        still reading it is waited for at most `DROP_LOCK_TIMEOUT`, then the drop is refused."""
        import psycopg

        store = PostgresStore(self.url, self.name, readonly=True)
        try:
            if not store.exists():
                raise CollectionNotFoundError(f"{store.path}: no such collection")
            store.check_schema()  # a schema that is not a munjang collection's is refused, not dropped
            conn = store.conn
            try:
                with conn.transaction():
                    conn.execute(f"SET LOCAL lock_timeout = '{DROP_LOCK_TIMEOUT}'")
                    # the key PostgresStore.write_lock holds for the whole of a write
                    key = f"munjang:{store.schema}"
                    free = conn.execute("SELECT pg_try_advisory_xact_lock(hashtext(%s))", (key,)).fetchone()
                    if not free[0]:
                        message = f"{store.path}: another process is writing to it: not dropped"
                        raise CollectionBusyError(message)
                    conn.execute(f'DROP SCHEMA "{store.schema}" CASCADE')
            except psycopg.errors.LockNotAvailable:
                raise CollectionBusyError(
                    f"{store.path}: another session kept it in use for {DROP_LOCK_TIMEOUT}: not dropped"
                ) from None
        finally:
            store.close()


if TYPE_CHECKING:
    from ..base import Backend, DenseSearch, LexicalSearch, Retriever

    _CONTRACT: type[Backend] = PostgresBackend  # mypy checks the classes against the contract
    _DENSE: type[DenseSearch] = PostgresDense
    _LEXICAL: type[LexicalSearch] = PostgresLexical
    _SPARSE: type[Retriever] = PostgresSparse
