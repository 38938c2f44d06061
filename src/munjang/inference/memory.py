"""Handing freed heap memory back to the system.

Served batches come in ever new shapes: the arrays of each are freed, but glibc's malloc keeps the
pages in its arenas, fragmented, so a serving process grows with every burst of traffic and never
shrinks. `release_freed_memory()` (glibc's malloc_trim) returns them; it costs a few milliseconds,
so callers run it when a burst is over (the model process after each batch, the batcher when its
queue empties). A no-op off glibc.

`drop_file_pages(path)` unmaps the resident pages of a file mapped read-only (OpenVINO's IR weights):
compiling a graph reads every page of its weights file once, and those pages then count in the
process's RSS although they are the page cache's, unchanged, and fault back in when read.
"""

from __future__ import annotations

import ctypes
from typing import Any

_TRIM: list[Any] = []


def release_freed_memory() -> None:
    """glibc's malloc_trim(0), where there is one."""
    if not _TRIM:
        try:
            _TRIM.append(ctypes.CDLL("libc.so.6").malloc_trim)
        except (OSError, AttributeError):
            _TRIM.append(None)
    if _TRIM[0] is not None:
        _TRIM[0](0)


MADV_DONTNEED = 4


def drop_file_pages(path: str) -> int:
    """Unmap this process's resident pages of every read-only mapping of the file `path` (madvise
    MADV_DONTNEED): they stay in the page cache and fault back in, unchanged, when next read. A
    read-only mapping holds nothing but the file, so nothing is lost. Linux only; returns the bytes
    of mappings advised (0 elsewhere)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            lines = maps.readlines()
        madvise = ctypes.CDLL("libc.so.6", use_errno=True).madvise
    except (OSError, AttributeError):
        return 0
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    advised = 0
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or fields[5].rstrip("\n") != path or "w" in fields[1]:
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        if madvise(start, end - start, MADV_DONTNEED) == 0:
            advised += end - start
    return advised
