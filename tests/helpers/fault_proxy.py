"""An HTTP proxy for tests, in front of a live server: it answers the next POSTs with planned
failures (429 with Retry-After, 500, ...) and forwards everything else unchanged."""

from __future__ import annotations

from collections import deque
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


class FaultProxy:
    """`app` is the ASGI app to serve (with tests.helpers.server.live_server); `fail(status, headers)`
    plans the answer to the next POST; `posts` counts the POSTs that reached it."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.faults: deque[tuple[int, dict[str, str]]] = deque()
        self.posts = 0
        self.app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])])

    def fail(self, status: int, times: int = 1, headers: dict[str, str] | None = None) -> None:
        for _ in range(times):
            self.faults.append((status, dict(headers or {})))

    async def _handle(self, request: Request) -> Any:
        body = await request.body()
        if request.method == "POST":
            self.posts += 1
            if self.faults:
                status, headers = self.faults.popleft()
                error = {"error": {"message": f"injected {status}", "type": "test"}}
                return JSONResponse(error, status_code=status, headers=headers)
        forwarded = {
            k: v for k, v in request.headers.items() if k.lower() in ("authorization", "content-type")
        }
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.request(
                request.method, f"{self.upstream}{request.url.path}", content=body, headers=forwarded
            )
        return Response(answer.content, status_code=answer.status_code, media_type="application/json")
