"""The embedded backend: a collection is one folder on the local disk (the default).

    folder/
      collection.db        SQLite (WAL): documents, metadata, lexical tokens, the embedding cache
      dense-L-D.hnsw       the HNSW graph (index="hnsw"), named by the watermark it has applied
        .seg-N, .manifest  its further segments, and the manifest that lists them all
      dense-L-D.exact      or the exact matrix (index="exact"), mapped by readers
      lexical/             the BM25 index's segments and manifest (`lexical_files.py`)
      write.lock           one writer at a time (a drop is refused while it is held); readers never take it

The database (`sqlite_store.py`) is the source of truth; the indexes (`followers/dense.py`,
`followers/lexical.py`) are saved beside it as derived files and caught up from the database when it
opens; every retriever runs in this process (`FolderBackend.retriever`).
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock

from ...followers.dense import DenseIndex
from ...followers.lexical import LexicalIndex
from ..base import RETRIEVER_KINDS, CollectionError, sparse_cache_key, token_cache_key, unsupported
from ..disk_faults import storage_fault, writable_media
from .aliases import FolderAliases
from .drop import acquire_writer_lock, drop_folder
from .sqlite_store import DocumentStore

DB_NAME = "collection.db"
LOCK_NAME = "write.lock"
# The collection's id, kept in its metadata: each index file saved beside the store records it, so a
# file of another collection put in its place is refused (`index/verified_file.py`).
OWNER = "collection_id"


def staging_folder(target: Path) -> Path:
    """A fresh hidden sibling of `target` to build a new collection in, renamed to `target` once
    complete (so a collection appears whole or not at all); refused when `target` exists."""
    if target.exists():
        raise CollectionError(f"{target} already exists: add to it, or choose another name")
    staging = target.with_name(f".{target.name}.creating-{os.getpid()}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
    except OSError as e:
        raise storage_fault(e, target.parent) or e from e
    return staging


class FolderBackend:
    """A collection in `folder`: SQLite plus the in-memory (and, for HNSW, saved) vector index."""

    kind = "embedded"
    retrievers = frozenset(RETRIEVER_KINDS)  # the SQLite store keeps every kind's vectors

    def __init__(self, folder: Path) -> None:
        self.folder: Path | None = folder
        self.path = folder
        self.location = str(folder)
        self._lock: FileLock | None = None  # one object per collection, so holding it is reentrant

    @staticmethod
    def names(where: Path) -> list[str]:
        """The collection folders directly inside the folder `where`, by name (hidden ones, being
        created or dropped, left out)."""
        parent = Path(where)
        if not parent.is_dir():
            raise CollectionError(f"{parent}: no such folder")
        return sorted(p.name for p in parent.iterdir() if p.name[0] != "." and (p / DB_NAME).is_file())

    @staticmethod
    def is_error(error: BaseException) -> bool:
        """SQLite's errors are turned into CollectionError where they can happen: none to tell apart."""
        return False

    @staticmethod
    def aliases(where: Path) -> FolderAliases:
        """The aliases of the folder of collections `where`, in its `aliases.json`."""
        return FolderAliases(Path(where))

    def create(self, config: dict[str, Any]) -> None:
        """The folder appears complete or not at all: it is built under a hidden name, then renamed."""
        target = self.path
        staging = staging_folder(target)
        try:
            store = DocumentStore(staging / DB_NAME, create=True)
            store.set_meta({**config, OWNER: secrets.token_hex(8)})
            store.close()
            os.rename(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def open_store(self, readonly: bool) -> DocumentStore:
        """The store; a writer gives a collection made before ids its `collection_id` (its saved
        index files, which name none, are then set aside and rebuilt once)."""
        if not self.path.is_dir():
            raise CollectionError(f"{self.path}: no such collection folder")
        store = DocumentStore(self.path / DB_NAME, readonly=readonly)
        if not readonly and OWNER not in store.get_meta():
            try:
                store.set_meta({OWNER: secrets.token_hex(8)})
            except BaseException:
                store.close()
                raise
        return store

    def writable(self) -> bool:
        return writable_media(self.path)

    def reader(self) -> Callable[[], DocumentStore]:
        path = self.path / DB_NAME
        return lambda: DocumentStore(path, readonly=True)

    def retriever(self, kind: str, store: Any, config: dict[str, Any], background: bool = False) -> Any:
        """Every retriever in process, following the SQLite store: the dense index saved beside it
        (loaded here), BM25 saved in `lexical/` for a new reader to map, SPLADE and ColBERT."""
        if kind == "dense":
            dense = DenseIndex(
                config["index"], config["dim"], config["metric"], config["model"], config["hnsw"],
                follow=store.readonly, owner=str(config.get(OWNER, "")),
            )  # fmt: skip
            dense.load(self.path, store)
            return dense
        if kind == "lexical":
            return LexicalIndex(
                config["lexical"], self.reader() if background else None, self.path / "lexical",
                owner=str(config.get(OWNER, "")),
            )  # fmt: skip
        # The extra retrievers' indexes are imported when a collection has them (`collection/retrievers.py`)
        from ...followers.retrievers import LiveSparseIndex, LiveTokenIndex

        if kind == "sparse":
            sparse = config["sparse"]
            return LiveSparseIndex(sparse_cache_key(str(sparse["model"])), int(sparse["dim"]))
        if kind == "multi_vector":
            tokens = config["multi_vector"]
            mean = tokens.get("similarity", "maxsim") == "meanmaxsim"
            return LiveTokenIndex(token_cache_key(str(tokens["model"])), int(tokens["dim"]), mean)
        raise unsupported(self, kind)

    @contextmanager
    def write_lock(self, store: Any, timeout: float) -> Iterator[None]:
        if self._lock is None:
            self._lock = FileLock(str(self.path / LOCK_NAME))
        lock = self._lock
        acquire_writer_lock(lock, self.path, self.location, timeout)
        try:
            yield
        finally:
            lock.release()

    def save_dense(self, dense: Any, tail: bool = False) -> None:
        try:
            if tail:
                dense.save_tail(self.path)
            else:
                dense.save(self.path)
        except OSError as e:
            raise storage_fault(e, self.location) or e from e

    def size_bytes(self, store: Any) -> int:
        files = [self.path / n for n in (DB_NAME, DB_NAME + "-wal")]
        return sum(f.stat().st_size for f in files if f.exists())

    def drop(self) -> None:
        """Remove the collection folder (`folder_drop.py`): only a munjang collection, never while
        a writer holds its lock."""
        drop_folder(self.path, self.location)


if TYPE_CHECKING:
    from ...followers.retrievers import LiveSparseIndex, LiveTokenIndex
    from ..base import Backend, DenseSearch, LexicalSearch, Retriever

    _CONTRACT: type[Backend] = FolderBackend  # mypy checks the classes against the contract
    _DENSE: type[DenseSearch] = DenseIndex
    _LEXICAL: type[LexicalSearch] = LexicalIndex
    _SPARSE: type[Retriever] = LiveSparseIndex
    _TOKENS: type[Retriever] = LiveTokenIndex
