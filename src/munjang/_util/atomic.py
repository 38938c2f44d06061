"""Writing a file so that a reader never sees half of it: write beside it, then rename into place."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path


def atomic_write(
    target: str | os.PathLike[str],
    write: Callable[[Path], object],
    *,
    fsync: bool = False,
    prefix: str = ".",
) -> None:
    """Run `write(tmp)` on a temporary name in `target`'s folder, then move it onto `target` with
    `os.replace`; the temporary file is removed if anything fails. The temporary name starts with
    `prefix` and ends with `target`'s suffix (so writers that go by the suffix write the same format).
    `fsync` flushes the file and then its folder to disk, for files that must survive a power cut."""
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{prefix}{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp{path.suffix}")
    try:
        write(tmp)
        if fsync:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    if fsync:
        fsync_folder(path.parent)


def fsync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename inside it) to disk, where the platform allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
