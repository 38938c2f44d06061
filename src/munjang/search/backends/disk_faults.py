"""A collection's disk faults and its SQLite transactions: a full disk or read-only media becomes one
error that names the problem (`StorageFullError`, `ReadOnlyError`), and a transaction never hides
the error that ended it behind a failed ROLLBACK."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from .base import CollectionError, ReadOnlyError, StorageFullError

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_SQLITE_READONLY, _SQLITE_FULL = 8, 13  # SQLite's primary result codes
_SQLITE_MESSAGES = {"database or disk is full": _SQLITE_FULL, "readonly database": _SQLITE_READONLY}


def _sqlite_code(error: sqlite3.Error) -> int | None:
    """SQLite's primary result code of an error (Python 3.11 has it; older ones by the message)."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None:
        return int(code) & 0xFF
    return next((c for text, c in _SQLITE_MESSAGES.items() if text in str(error)), None)


def storage_fault(error: BaseException, where: object) -> CollectionError | None:
    """The CollectionError a disk fault means (full disk, read-only media), naming `where`, or None
    for any other error. SQLite reports both as result codes; files as errno."""
    code = _sqlite_code(error) if isinstance(error, sqlite3.Error) else None
    full = code == _SQLITE_FULL or (isinstance(error, OSError) and error.errno in _FULL_ERRNOS)
    if full:
        return StorageFullError(
            f"{where}: the disk is full; nothing was written and what was stored is intact "
            "(free some space and run the add again: it resumes)"
        )
    readonly = code == _SQLITE_READONLY or (isinstance(error, OSError) and error.errno == errno.EROFS)
    if readonly:
        return ReadOnlyError(f"{where} is on read-only media: it can be searched, not changed")
    return None


def full_disk(error: sqlite3.Error, folder: Path) -> StorageFullError | None:
    """SQLite reports a full disk met while opening (no room for the WAL files) as an I/O error."""
    try:
        full = shutil.disk_usage(folder).free == 0
    except OSError:
        return None
    return StorageFullError(f"{folder}: the disk is full ({error}); free some space") if full else None


def writable_media(folder: Path) -> bool:
    """Whether files can be created in `folder` (False on a read-only mount, even for root)."""
    return os.access(folder, os.W_OK)


class Transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (KeyboardInterrupt included). A full
    disk or read-only media becomes StorageFullError / ReadOnlyError naming `where`; SQLite may have
    rolled back already (it does on a full disk), so ROLLBACK runs only while a transaction is open,
    and never hides the error that caused it."""

    def __init__(self, conn: sqlite3.Connection, where: object) -> None:
        self.conn = conn
        self.where = where

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            raise storage_fault(e, self.where) or e from e
        return self.conn

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
            except sqlite3.Error as e:
                self._rollback()
                raise storage_fault(e, self.where) or e from e
            return
        self._rollback()
        fault = storage_fault(exc, self.where) if isinstance(exc, (sqlite3.Error, OSError)) else None
        if fault is not None:
            raise fault from exc

    def _rollback(self) -> None:
        if self.conn.in_transaction:  # the cause is being raised: a failed ROLLBACK must not hide it
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
