"""munjang's HTTP server: an OpenAI-compatible embeddings service (FastAPI + uvicorn).

`create_app(ServerSettings(models={"name": encoder}))` gives the ASGI app; `munjang serve` runs it.
"""

from __future__ import annotations

from .app import create_app
from .settings import ServerSettings

__all__ = ["ServerSettings", "create_app"]
