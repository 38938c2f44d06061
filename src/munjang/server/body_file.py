"""A request body streamed to a file, bounded: for bodies too large to hold in memory (a snapshot
archive to restore). The size is checked as the bytes arrive (and the declared Content-Length
first), so an oversized upload is refused before it fills the disk; a client that stops sending
for `IDLE_TIMEOUT_S` is refused rather than holding the request open."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
from fastapi import Request
from starlette.requests import ClientDisconnect

from .errors import APIError

# Seconds without a byte arriving before an upload is given up (a large body may take long in all).
IDLE_TIMEOUT_S = 30.0


async def receive_to_file(request: Request, path: Path, limit: int) -> int:
    """Write the request's body to `path` (made or replaced); its size. 413 past `limit` bytes, 408
    when it stalls, 400 when the client leaves; the caller removes `path` in every case it fails."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise APIError(
            413, f"the body is {declared} bytes, over the limit of {limit}", None, "body_too_large"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    chunks = request.stream().__aiter__()
    with open(path, "wb") as out:
        while True:
            try:
                with anyio.fail_after(IDLE_TIMEOUT_S):
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                break
            except TimeoutError:
                message = f"no part of the body arrived for {IDLE_TIMEOUT_S:g} s"
                raise APIError(408, message, None, "body_timeout") from None
            except ClientDisconnect:
                message = "the client disconnected before sending the whole body"
                raise APIError(400, message, None, "client_disconnected") from None
            size += len(chunk)
            if size > limit:
                raise APIError(413, f"the body is over the limit of {limit} bytes", None, "body_too_large")
            await asyncio.to_thread(out.write, chunk)
        await asyncio.to_thread(out.flush)
    return size
