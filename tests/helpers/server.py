"""A real uvicorn server on a free loopback port, in a thread, for tests that need live HTTP."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import uvicorn

# The base URL for TestClient: a loopback Host, as a local client sends (the server refuses others).
LOCAL = "http://127.0.0.1"


@contextmanager
def live_server(app: Any, timeout: float = 30.0, **config: Any) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 until the block ends; yields its base URL once /health answers.
    `config` goes to uvicorn.Config (e.g. `http=` a protocol class)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **config))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.05)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)
