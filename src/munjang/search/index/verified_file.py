"""Opening a persisted index file safely, and setting a damaged one aside.

Every index file a collection keeps beside its store (array files, HNSW graphs) carries an xxh3-64
checksum of its bytes, checked when it is opened, before anything is mapped into answers or handed
to usearch. A file that fails (not a regular file, cut short, garbled, another collection's, newer
than its store) is renamed `<name>.bad-<time>` with one warning line, and the index is rebuilt from
the store: a damaged derived file costs time, never an answer.
"""

from __future__ import annotations

import logging
import mmap
import os
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import xxhash

log = logging.getLogger("munjang.search.index")

BAD = ".bad-"


class DamagedIndexFile(ValueError):
    """An index file that must not be used: not a regular file, cut short, garbled, or not this one."""


class UnverifiedFile(DamagedIndexFile):
    """An index file written without checksums (by an older munjang): it cannot be verified."""


@contextmanager
def opened(path: Path) -> Iterator[int]:
    """A read-only descriptor of `path`, refused (`DamagedIndexFile`) unless it is a regular file:
    a FIFO, a device or a folder in its place must not block or be read. O_NONBLOCK keeps the open
    itself from waiting on a FIFO swapped in between the check and the open."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise DamagedIndexFile(f"{path}: not a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DamagedIndexFile(f"{path}: not a regular file")
        yield fd
    finally:
        os.close(fd)


def mapped(fd: int) -> mmap.mmap | None:
    """The whole file of `fd` mapped read-only (None when it is empty)."""
    size = os.fstat(fd).st_size
    return mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else None


def checksum(data: bytes | memoryview | mmap.mmap) -> str:
    """The xxh3-64 digest of `data`, as hex."""
    return xxhash.xxh3_64_hexdigest(data)


def set_aside(path: Path, error: BaseException, others: Sequence[Path] = ()) -> None:
    """Rename `path` (`error`: why it failed, naming it), the files that go with it (`path.*`:
    HNSW segments, tails) and `others` (a damaged file it names) to `<name>.bad-<time>`, with one
    warning line; where renaming is refused (read-only media), the files are left and only skipped.
    A file written without checksums by an older munjang is not damaged, only unverifiable: it is
    removed (kept, a large matrix would double the folder's size), and rebuilt all the same."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    old = isinstance(error, UnverifiedFile)
    moved = []
    for file in (path, *sorted(path.parent.glob(path.name + ".*")), *others):
        if BAD in file.name:
            continue
        try:
            if old:
                os.unlink(file)
            else:
                os.rename(file, file.with_name(f"{file.name}{BAD}{stamp}"))
            moved.append(file.name)
        except OSError:
            continue
    if old:
        where = "removed" if moved else "left in place (it cannot be removed)"
        log.warning("munjang: %s; %s, the index is rebuilt from the store", error, where)
        return
    where = f"set aside as {path.name}{BAD}{stamp}" if moved else "left in place (it cannot be renamed)"
    log.warning("munjang: damaged index file: %s; %s, the index is rebuilt from the store", error, where)


def skipped(path: Path, error: OSError) -> None:
    """One warning line for an index file that cannot be read now (not damaged: it is left)."""
    log.warning("munjang: index file %s not read (%s); the index is rebuilt from the store", path, error)


def set_aside_files(folder: Path) -> list[Path]:
    """The files in `folder` and below that were set aside as damaged (kept to be looked at)."""
    try:
        return sorted(folder.rglob(f"*{BAD}*"))
    except OSError:
        return []
