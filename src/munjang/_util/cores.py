"""How many CPU cores this process may use: without torch, so the index layer and a static-model
reader can size their thread pools without importing it."""

from __future__ import annotations

import os
from functools import lru_cache


@lru_cache(maxsize=1)
def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity masks on this OS
        return max(1, os.cpu_count() or 1)
