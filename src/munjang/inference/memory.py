"""Handing freed heap memory back to the system.

Served batches come in ever new shapes: the arrays of each are freed, but glibc's malloc keeps the
pages in its arenas, fragmented, so a serving process grows with every burst of traffic and never
shrinks. `release_freed_memory()` (glibc's malloc_trim) returns them; it costs a few milliseconds,
so callers run it when a burst is over (the model process after each batch, the batcher when its
queue empties). A no-op off glibc.
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
