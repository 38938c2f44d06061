"""The Qdrant backend: munjang's SQLite store is the record, Qdrant the search engine.

    qdrant+local://FOLDER              qdrant-client's embedded local mode, all on this disk
    qdrant://HOST:PORT/FOLDER?...      a Qdrant server or cluster; the records stay in FOLDER

Each collection is a folder FOLDER/NAME holding `collection.db` (the same SQLite store as a folder
collection: passages, metadata, tokens, the embedding cache, the deletion log, transactional) and
`write.lock`; in local mode also `qdrant/`, Qdrant's own storage. Qdrant holds one point per passage
(point id = the passage's label) with named vectors `dense`, `bm25` (Kiwi tokens as a sparse
vector, `Modifier.IDF`; after a re-analysis the BM25 slot the store names, `slots.py`) and, for
a collection with a sparse model, `splade` (`qdrant_sparse.py`), with a multi-vector model
`colbert` (`qdrant_tokens.py`), and the document id, chunk, offsets, text and metadata as payload.
What Qdrant has applied is a `Watermark` in the Qdrant collection's own metadata, written after the
points, so a crash between the two replays an idempotent upsert:
nothing is lost and nothing applied twice.

Server options in the URL query: `shards` and `replicas` (a new collection's shard_number and
replication_factor), `prefix` (Qdrant collection names: PREFIX + NAME, default "munjang_"), `https=1`;
the API key is read from $QDRANT_API_KEY, never from the URL.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from filelock import FileLock

from ...._util.extras import require
from ..base import RETRIEVER_KINDS, CollectionBusyError, CollectionError, unsupported
from ..disk_faults import writable_media
from ..folder.aliases import FolderAliases
from ..folder.backend import staging_folder
from ..folder.drop import acquire_writer_lock, drop_folder
from ..folder.sqlite_store import DocumentStore
from . import slots
from .index import QdrantDense, QdrantLexical, QdrantPoints
from .sparse import QdrantSparse
from .tokens import QdrantTokens

DB_NAME = "collection.db"
LOCK_NAME = "write.lock"
METADATA_LOG = (
    "CREATE TABLE IF NOT EXISTS qdrant_metadata_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL)"
)
LOCAL_COLLECTION = "passages"  # the one Qdrant collection in a local-mode collection's qdrant/ folder

# Local mode locks its storage folder per client, so a process shares one client per folder among
# the stores open on it (path -> [client, stores holding it]); the last store closed releases it,
# and with it the folder, for another process.
_local_clients: dict[str, list[Any]] = {}
_clients_lock = threading.Lock()


def _options(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}


def _folder(url: str) -> Path:
    """The folder of collection records named by a qdrant / qdrant+local URL."""
    parts = urlsplit(url)
    raw = "/" + parts.path.lstrip("/") if parts.scheme == "qdrant" else parts.netloc + parts.path
    if not raw or raw == "/":
        example = "qdrant+local://FOLDER" if parts.scheme != "qdrant" else "qdrant://HOST:PORT/FOLDER"
        raise ValueError(f"{url!r} names no folder for the collections' records; use {example}")
    return Path(raw)


@atexit.register
def _close_local_clients() -> None:
    """Close the local engines before the interpreter tears down what their finalizers need."""
    with _clients_lock:
        clients = [entry[0] for entry in _local_clients.values()]
        _local_clients.clear()
    for client in clients:
        client.close()


def _acquire_local(path: Path) -> Any:
    """The local engine on `path`, opened on first use; each call is matched by `_release_local`."""
    qdrant_client = require("qdrant_client")
    key = str(path.resolve())
    with _clients_lock:
        entry = _local_clients.get(key)
        if entry is None:
            try:
                entry = [qdrant_client.QdrantClient(path=key), 0]
            except RuntimeError as e:  # another process holds the local storage
                raise CollectionError(
                    f"{path.parent}: Qdrant's local mode is open in another process; one process at a "
                    "time (use a Qdrant server, qdrant://, for several)"
                ) from e
            _local_clients[key] = entry
        entry[1] += 1
        return entry[0]


def _release_local(path: Path) -> None:
    key = str(path.resolve())
    with _clients_lock:
        entry = _local_clients.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:
            return
        del _local_clients[key]
    entry[0].close()


class QdrantRecords(DocumentStore):
    """The SQLite store of a Qdrant collection, holding the Qdrant client while it is open. It
    logs metadata changed in place for the push (`QdrantPoints.sync`)."""

    def __init__(self, path: Path, readonly: bool, client: Any, release: Callable[[], None]) -> None:
        super().__init__(path, readonly=readonly)
        self.client, self._release = client, release
        self.points: QdrantPoints | None = None  # the Qdrant side, once the backend opened it
        if not readonly:
            self.conn.execute(METADATA_LOG)

    def update_metadata(self, updates: Sequence[tuple[str, str]]) -> None:
        super().update_metadata(updates)
        self.conn.executemany("INSERT INTO qdrant_metadata_log (id) VALUES (?)", [(i,) for i, _ in updates])

    def stage_tokens(self, rows: Sequence[tuple[int, str]], restart: bool = False) -> None:
        """Write the new tokens of these passages to the pending BM25 slot in Qdrant, then keep them
        beside the stored ones (`slots.stage`): a run killed in between writes them again."""
        slots.stage(self._points(), self, list(rows), restart)
        super().stage_tokens(rows, restart)

    def put_analysis(self, meta: dict[str, Any], staged: bool) -> None:
        """Set these config values; with `staged`, switch the tokens and the BM25 slot searches use
        with them, in the store's one transaction (`slots.switch`)."""
        if not staged:
            super().put_analysis(meta, False)
            return
        slots.switch(
            self._points(), self, meta, lambda values: super(QdrantRecords, self).put_analysis(values, True)
        )

    def staged_rows(self, batch: int = 10_000) -> Iterator[tuple[str, str]]:
        """(document id, new tokens JSON) of every stored passage with staged tokens, in label order."""
        after = 0
        while True:
            rows = self.conn.execute(
                "SELECT d.label, d.id, s.tokens FROM documents d "
                "JOIN analysis_staging s ON s.label = d.label WHERE d.label > ? ORDER BY d.label LIMIT ?",
                (after, batch),
            ).fetchall()
            if not rows:
                return
            yield from ((doc_id, tokens) for _, doc_id, tokens in rows)
            after = int(rows[-1][0])

    def _points(self) -> QdrantPoints:
        if self.points is None:
            raise CollectionError(f"{self.path}: its Qdrant points are not open")
        return self.points

    def metadata_seq(self) -> int:
        """The last metadata change logged (0: none)."""
        try:
            row = self.conn.execute("SELECT max(seq) FROM qdrant_metadata_log").fetchone()
        except sqlite3.OperationalError:  # a collection no writer of this version has opened
            return 0
        return int(row[0] or 0)

    def prune_metadata_log(self, through: int) -> None:
        """Forget the changes logged up to `through` (pushed to Qdrant), keeping that last entry so
        `metadata_seq` stays where the push left it."""
        self.conn.execute("DELETE FROM qdrant_metadata_log WHERE seq < ?", (through,))

    def metadata_updates_after(self, seq: int) -> dict[int, str]:
        """{label: metadata JSON} of the passages whose metadata changed after `seq`."""
        ids = [
            r[0]
            for r in self.conn.execute("SELECT DISTINCT id FROM qdrant_metadata_log WHERE seq > ?", (seq,))
        ]
        out: dict[int, str] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ", ".join("?" * len(part))
            query = f"SELECT label, metadata FROM documents WHERE id IN ({marks})"
            out.update((int(label), text) for label, text in self.conn.execute(query, part))
        return out

    def close(self) -> None:
        try:
            super().close()
        finally:
            release, self._release = self._release, lambda: None
            release()


class QdrantBackend:
    """The collection `name` under the records folder of `url`, searched by Qdrant."""

    kind = "qdrant"
    # SPLADE as a named sparse vector of each point, ColBERT as a named multivector, and so bge-m3's
    # three heads (dense, `splade`, `colbert`) in one point.
    retrievers = frozenset(RETRIEVER_KINDS)

    def __init__(self, url: str, name: str) -> None:
        if not name or "/" in name or name.startswith("."):
            raise ValueError(f"a Qdrant collection name is one plain name, got {name!r}")
        self.url, self.name = url, name
        self.local = urlsplit(url).scheme == "qdrant+local"
        self.path = _folder(url) / name
        self.folder: Path | None = self.path
        self.location = str(self.path)
        self.options = _options(url)
        self.readonly = False
        self._lock: FileLock | None = None
        self._points: QdrantPoints | None = None

    # -- where the points live ---------------------------------------------------------------------
    def _connect(self, qdrant: Path) -> tuple[Any, Callable[[], None]]:
        """A Qdrant client and the function that lets go of it: the local engine in `qdrant`, or
        the server."""
        if self.local:
            return _acquire_local(qdrant), lambda: _release_local(qdrant)
        client = _server_client(self.url)
        return client, client.close

    @property
    def collection_name(self) -> str:
        return LOCAL_COLLECTION if self.local else self.options.get("prefix", "munjang_") + self.name

    @staticmethod
    def names(where: str) -> list[str]:
        """The collections whose records are in the folder of the URL `where` (hidden ones, being
        created or dropped, left out)."""
        parent = _folder(where)
        if not parent.exists():
            return []  # made by the first collection created there
        if not parent.is_dir():
            raise CollectionError(f"{parent}: not a folder")
        return sorted(p.name for p in parent.iterdir() if p.name[0] != "." and (p / DB_NAME).is_file())

    @staticmethod
    def is_error(error: BaseException) -> bool:
        """An error from Qdrant (the server refused, timed out or went away)."""
        module = type(error).__module__ or ""
        return module.startswith(("qdrant_client", "grpc", "httpx", "httpcore"))

    @staticmethod
    def aliases(where: str) -> FolderAliases:
        """The aliases of the collections whose records are in the folder of the URL `where`, in
        that folder's `aliases.json` (the records are what an alias must name: Qdrant's own aliases
        name only the engine's points)."""
        return FolderAliases(_folder(where))

    # -- the contract ----------------------------------------------------------------------------------
    def create(self, config: dict[str, Any]) -> None:
        """Records folder and Qdrant collection appear together or not at all: the folder is built
        under a hidden name and renamed last; a failure removes what was made."""
        target = self.path
        staging = staging_folder(target)
        client, release, made = None, None, False
        try:
            store = DocumentStore(staging / DB_NAME, create=True)
            # a new Qdrant collection searches its first BM25 slot (a snapshot's config may name another)
            store.set_meta({k: v for k, v in config.items() if k not in (slots.SLOT_KEY, slots.PENDING_KEY)})
            store.close()
            client, release = self._connect(staging / "qdrant")
            QdrantPoints.create_collection(client, self.collection_name, config, self.options)
            made = True
            release()
            release = None
            os.rename(staging, target)
        except BaseException:
            if made and not self.local and client is not None:
                client.delete_collection(self.collection_name)
            if release is not None:
                release()
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def open_store(self, readonly: bool) -> QdrantRecords:
        if not self.path.is_dir():
            raise CollectionError(f"{self.path}: no such collection")
        self.readonly = readonly
        client, release = self._connect(self.path / "qdrant")
        try:
            return QdrantRecords(self.path / DB_NAME, readonly, client, release)
        except BaseException:
            release()
            raise

    def writable(self) -> bool:
        return writable_media(self.path)

    def reader(self) -> Callable[[], DocumentStore]:
        path = self.path / DB_NAME
        return lambda: DocumentStore(path, readonly=True)

    def points(self, store: QdrantRecords, config: dict[str, Any]) -> QdrantPoints:
        """The Qdrant side of this collection; only a writer pushes the store's changes into it."""
        found = self._points
        if found is None:
            client = store.client
            if not client.collection_exists(self.collection_name):
                raise CollectionError(
                    f"{self.location}: its Qdrant collection {self.collection_name!r} is missing"
                )
            found = QdrantPoints(
                client, self.collection_name, config, writer=not self.readonly, local=self.local,
                folder=self.path,
            )  # fmt: skip
            self._points = found
        store.points = found
        return found

    def retriever(self, kind: str, store: Any, config: dict[str, Any], background: bool = False) -> Any:
        """Each retriever searched by Qdrant on its points: `dense`, lucene BM25 on `bm25` (the
        other methods need every document's scores: munjang's in-process index answers those),
        SPLADE on `splade` (`qdrant_sparse.py`), ColBERT on the `colbert` multivectors
        (`qdrant_tokens.py`); bge-m3's three heads in one point."""
        points = self.points(store, config)
        if kind == "dense":
            return QdrantDense(points)
        if kind == "lexical":
            lexical = config["lexical"]
            if lexical.get("method", "lucene") != "lucene" or "delta" in lexical:
                from ...followers.lexical import LexicalIndex

                return LexicalIndex(lexical)
            return QdrantLexical(points, lexical)
        if kind == "sparse":
            return QdrantSparse(points, store, int(config["sparse"]["dim"]))
        if kind == "multi_vector":
            tokens = config["multi_vector"]
            mean = tokens.get("similarity", "maxsim") == "meanmaxsim"
            return QdrantTokens(points, store, int(tokens["dim"]), mean)
        raise unsupported(self, kind)

    @contextmanager
    def write_lock(self, store: Any, timeout: float) -> Iterator[None]:
        if self._lock is None:
            self._lock = FileLock(str(self.path / LOCK_NAME))
        acquire_writer_lock(self._lock, self.path, self.location, timeout)
        try:
            yield
        finally:
            self._lock.release()

    def save_dense(self, dense: Any, tail: bool = False) -> None:
        """Qdrant keeps its own state; the watermark is written with every push."""

    def size_bytes(self, store: Any) -> int:
        files = [self.path / DB_NAME, self.path / (DB_NAME + "-wal"), *self.path.glob("bm25*_stats.db*")]
        total = sum(f.stat().st_size for f in files if f.exists())
        qdrant = self.path / "qdrant"
        if qdrant.is_dir():
            total += sum(f.stat().st_size for f in qdrant.rglob("*") if f.is_file())
        return total

    def drop(self) -> None:
        """Remove the records folder and the Qdrant collection (`folder_drop.py`), never while a
        writer holds the lock. Local mode: Qdrant's storage is inside the folder, and the drop is
        refused while any process has it open; a server: its collection is deleted once the
        folder is hidden (a failure there puts the folder back)."""
        if self.local:
            drop_folder(self.path, self.location, hold=self._local_storage_free)
            return

        def delete_points() -> None:
            client = _server_client(self.url)
            try:
                client.delete_collection(self.collection_name)
            finally:
                client.close()

        drop_folder(self.path, self.location, outside=delete_points)

    @contextmanager
    def _local_storage_free(self) -> Iterator[None]:
        """Hold local mode's own lock on the collection's Qdrant storage: refused while a client in
        this or another process has it open."""
        qdrant = self.path / "qdrant"
        with _clients_lock:
            opened_here = str(qdrant.resolve()) in _local_clients
        if opened_here:
            raise CollectionBusyError(f"{self.location} is open in this process: close it before dropping it")
        lock_file = qdrant / ".lock"
        if not lock_file.is_file():
            yield
            return
        require("qdrant_client")
        import portalocker  # qdrant-client's own file lock

        with open(lock_file, "r+") as handle:
            try:
                portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
            except portalocker.exceptions.LockException:
                message = f"{self.location} is open in another process: not dropped"
                raise CollectionBusyError(message) from None
            try:
                yield
            finally:
                portalocker.unlock(handle)


def _server_client(url: str) -> Any:
    qdrant_client = require("qdrant_client")
    parts, options = urlsplit(url), _options(url)
    return qdrant_client.QdrantClient(
        host=parts.hostname or "localhost",
        port=parts.port or 6333,
        https=options.get("https", "0") in ("1", "true"),
        api_key=os.environ.get("QDRANT_API_KEY") or None,
        timeout=int(options.get("timeout", "60")),
    )


if TYPE_CHECKING:
    from ..base import Backend, DenseSearch, LexicalSearch, Retriever

    _CONTRACT: type[Backend] = QdrantBackend  # mypy checks the classes against the contract
    _DENSE: type[DenseSearch] = QdrantDense
    _LEXICAL: type[LexicalSearch] = QdrantLexical
    _SPARSE: type[Retriever] = QdrantSparse
    _TOKENS: type[Retriever] = QdrantTokens
