"""A span per HTTP request, the parent of its stages' spans (`munjang._util.tracing`); the app adds
this middleware only while tracing is on, so a server without it pays nothing."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from .._util.tracing import span


class RequestSpans:
    """ASGI middleware: `POST /v1/collections/docs/search` and the like, with the answer's status."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with span(f"{scope['method']} {scope['path']}", **{"http.method": scope["method"]}) as current:

            async def sent(message: Any) -> None:
                if message["type"] == "http.response.start":
                    current.set_attribute("http.status_code", message["status"])
                await send(message)

            await self.app(scope, receive, sent)
