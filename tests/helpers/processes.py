"""A `munjang serve` in a process of its own, and the processes under it (Linux /proc)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def children(pid: int) -> list[int]:
    """Every process below `pid` (children, their children, ...)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@contextmanager
def serve_process(
    args: list[str], env: dict[str, str], timeout: float = 120.0
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`munjang serve ARGS` on a free loopback port; yields (process, base URL) once /health answers."""
    port = free_port()
    command = [sys.executable, "-m", "munjang.cli", "serve", "--port", str(port), "--no-access-log", *args]
    full_env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **env}
    process = subprocess.Popen(command, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None:
                out = process.stdout.read().decode() if process.stdout else ""
                raise RuntimeError(f"munjang serve exited with {process.returncode}:\n{out}")
            if time.monotonic() > deadline:
                raise RuntimeError("munjang serve did not answer /health in time")
            time.sleep(0.2)
        yield process, url
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
