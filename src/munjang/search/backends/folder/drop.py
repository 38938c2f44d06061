"""Dropping a collection kept in a folder (the folder backend, and the Qdrant backend's records):
the folder is removed only when it is a munjang collection and no writer holds its lock.

The order makes a drop all or nothing for every reader of the parent folder: under the writer lock,
the folder is renamed to a hidden name (`.NAME.dropping-PID`: at once it is no longer listed, and
NAME is free for a new collection), anything kept outside the folder is removed (a Qdrant server's
collection; if that fails, the folder is renamed back and nothing is lost), then the database, then
the rest. A process killed part-way leaves a hidden folder, which no listing shows.

A writer that opened the collection before the drop takes the same lock (`acquire_writer_lock`), and
then finds the database gone: its write fails with `CollectionNotFoundError` instead of going to
files that no folder holds any more.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext, suppress
from pathlib import Path

from filelock import FileLock, Timeout

from ..base import CollectionBusyError, CollectionError, CollectionNotFoundError
from ..disk_faults import storage_fault
from .sqlite_store import DocumentStore

DB_NAME = "collection.db"
LOCK_NAME = "write.lock"
SIDE_FILES = ("-wal", "-shm")


def check_collection_folder(path: Path) -> None:
    """Raise unless `path` is a munjang collection folder: a real folder (not a link) holding a
    collection database munjang can open."""
    if path.is_symlink():
        raise CollectionError(f"{path} is a link, not a collection folder: not dropped")
    if not path.exists():
        raise CollectionNotFoundError(f"{path}: no such collection")
    if not path.is_dir() or not (path / DB_NAME).is_file():
        raise CollectionError(f"{path} is not a munjang collection folder (no {DB_NAME}): not dropped")
    DocumentStore(path / DB_NAME, readonly=True).close()  # a foreign database is refused by name


def acquire_writer_lock(lock: FileLock, path: Path, location: str, timeout: float) -> None:
    """Take a collection folder's writer lock, or raise naming why: another process is writing, or
    the collection was dropped (checked before, since the lock would make its folder again, and
    after, for a drop that finished while this waited)."""
    _check_not_dropped(path, location)
    try:
        lock.acquire(timeout=timeout)
    except OSError as e:
        raise storage_fault(e, location) or e from e
    except Timeout:
        raise CollectionError(
            f"{location}: another process is writing (lock held longer than {timeout} s)"
        ) from None
    try:
        _check_not_dropped(path, location)
    except CollectionNotFoundError:
        lock.release()
        with suppress(OSError):  # the folder the lock file made again: nothing else is in it
            (path / LOCK_NAME).unlink()
            path.rmdir()
        raise


def _check_not_dropped(path: Path, location: str) -> None:
    if not (path / DB_NAME).is_file():
        raise CollectionNotFoundError(f"{location}: the collection was dropped (its folder is gone)")


def drop_folder(
    path: Path,
    location: str,
    hold: Callable[[], AbstractContextManager[object]] | None = None,
    outside: Callable[[], None] | None = None,
) -> None:
    """Remove the collection folder `path` (see the module docstring). `hold`: a context that must
    also be held while it goes (refusing if it cannot be); `outside`: removes what the collection
    keeps elsewhere, after the folder is hidden."""
    check_collection_folder(path)
    lock = FileLock(str(path / LOCK_NAME))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise CollectionBusyError(f"{location}: another process is writing to it: not dropped") from None
    except OSError as e:
        raise storage_fault(e, location) or e from e
    try:
        with (hold or nullcontext)():
            doomed = path.with_name(f".{path.name}.dropping-{os.getpid()}")
            try:
                shutil.rmtree(doomed, ignore_errors=True)
                os.rename(path, doomed)
            except OSError as e:
                raise storage_fault(e, location) or e from e
            if outside is not None:
                try:
                    outside()
                except BaseException:
                    os.rename(doomed, path)
                    raise
            try:
                for name in (DB_NAME, *(DB_NAME + side for side in SIDE_FILES)):
                    (doomed / name).unlink(missing_ok=True)
            except OSError as e:
                os.rename(doomed, path)
                raise storage_fault(e, location) or e from e
            shutil.rmtree(doomed, ignore_errors=True)  # without its database it is no collection
    finally:
        lock.release()
