"""Real file-system faults for tests: a small tmpfs that can be filled (disk full) or remounted
read-only (read-only media). Mounting needs root, as the suite runs in CI; elsewhere the tests that
need it are skipped with the reason."""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a test file system here (needs root): {done.stderr.strip()}")


@contextmanager
def small_disk(folder: Path, size: str = "16m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `folder` for the block."""
    folder.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder))
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def make_readonly(folder: Path) -> None:
    """Remount the disk at `folder` read-only (as a CD, a read-only NFS export or a sealed image)."""
    _mount("-o", "remount,ro", str(folder))


def fill(folder: Path) -> Path:
    """Fill the disk holding `folder` with one file until the disk is full; delete the file to
    free the space again."""
    filler = folder / "filler.bin"
    block = b"\0" * (1 << 16)
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(block)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
    return filler
