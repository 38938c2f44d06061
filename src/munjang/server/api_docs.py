"""The API's own description: GET /openapi.json, and GET /docs (Swagger UI) served from this
server's files, so nothing loads from a CDN and the docs work offline.

With an API key, /openapi.json needs the key like every /v1 route, and /docs is off: a browser
cannot send the key to a page, and the docs would otherwise show the API to anyone who can reach
the port. Swagger UI's files come from the `swagger-ui-bundle` package (the server extra); where it
is missing, /docs is off and /openapi.json still answers.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"


def swagger_ui_folder() -> Path | None:
    """Swagger UI's files (swagger-ui-bundle), or None when the package is not installed."""
    if importlib.util.find_spec("swagger_ui_bundle") is None:
        return None
    from swagger_ui_bundle import swagger_ui_path

    return Path(str(swagger_ui_path))


def add_api_docs(app: FastAPI, protected: bool, key_check: Callable[[Request], Awaitable[None]]) -> bool:
    """Register /openapi.json (behind `key_check`) and, on a server that needs no key (`protected`
    False) with Swagger UI installed, /docs; returns whether /docs is served. Create the app with
    `openapi_url=None, docs_url=None, redoc_url=None` so only these are."""

    @app.get("/openapi.json", include_in_schema=False, dependencies=[Depends(key_check)])
    async def openapi() -> JSONResponse:
        spec: dict[str, Any] = app.openapi()
        return JSONResponse(spec)

    folder = swagger_ui_folder()
    if protected or folder is None:
        return False
    app.mount(ASSETS, StaticFiles(directory=folder), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title} - API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
        )

    return True
