"""A killed server leaves no process behind: its model workers watch their parent."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.helpers.processes import alive, children, serve_process

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


@pytest.mark.parametrize("backend", [pytest.param("torch:fp32", marks=pytest.mark.slow), "auto"])
def test_sigkill_of_the_server_leaves_no_process_after_two_seconds(tmp_path, backend):
    """With two model processes (torch fp32), or with the automatic choice being measured in the
    background (an empty cache) by a process of its own."""
    env = {"MUNJANG_CACHE": str(tmp_path / "cache"), "MUNJANG_ENCODE_BACKEND": backend}
    args = ["-m", "all-MiniLM-L6-v2", "--model-processes", "2" if backend != "auto" else "0"]
    with serve_process(args, env) as (server, _):
        below = children(server.pid)
        assert len(below) >= (2 if backend != "auto" else 1)  # model processes, or the measuring one
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        deadline = time.monotonic() + 2.0
        while any(alive(pid) for pid in below) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [pid for pid in below if alive(pid)]
    for pid in left:  # a failing run leaves nothing behind either
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left 2 s after the server was killed: {left}"
