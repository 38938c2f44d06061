"""One C++ runtime for the process, before usearch loads.

usearch's Linux wheel links its own copy of libstdc++ and exports that copy's process-wide ("unique")
symbols. A library loaded after it that needs the system's libstdc++ (onnxruntime's, first of all) can
then start on a runtime half set up by usearch's copy, and the process dies in a segmentation fault
(`import usearch.compiled; import onnxruntime`). Putting the system's libstdc++ in the global symbol
scope first, as importing torch does, makes usearch's copy bind to it, so every library shares one.
"""

from __future__ import annotations

import ctypes
import sys


def share_libstdcxx() -> bool:
    """Load the system's libstdc++ into the global scope (Linux); whether it is there now."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)
    except OSError:  # no system libstdc++ (a static or musl build): nothing to share
        return False
    return True


share_libstdcxx()
