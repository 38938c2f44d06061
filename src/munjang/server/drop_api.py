"""DELETE /v1/collections/{name}: drop a served collection and everything it holds.

Key-protected like every write, and under the same cross-site rules (`guard.py`: a DELETE to /v1/
must say `Content-Type: application/json`, and a foreign Origin is refused). The steps:
1. the collection leaves `served` at once: a new request for it answers 404;
2. it is closed: the writes already queued on its thread finish first, and a request queued behind
   the close answers 404 (`ServedCollection.dropped`), never an error from a closed store;
3. it is dropped from its backend (`Collection.drop`).
If the backend refuses (another process writes to it: 409 `drop_refused`; its database failed: 503),
nothing was removed and the collection is served again. Any served collection may be dropped: one
found in the collections folder or database, one created over HTTP, one named on the command line,
and the demo (`serve --demo` builds it again at the next start).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import APIRouter

from ..search import CollectionError, CollectionNotFoundError
from ..search.collection.collection import Collection
from .collections_api import serve_existing
from .errors import APIError
from .served_collection import ServedCollection
from .settings import ServerSettings

logger = logging.getLogger("munjang.server")


def add_drop_route(router: APIRouter, settings: ServerSettings, served: dict[str, ServedCollection]) -> None:
    """Register DELETE /v1/collections/{name} on the (key-protected) /v1 router."""

    @router.delete("/collections/{name}")
    async def drop_collection(name: str) -> dict[str, Any]:
        """Drop a collection: its documents, vectors and indexes are deleted; there is no undo."""
        target = served.get(name)
        if target is None:
            known = ", ".join(served) or "none"
            raise APIError(404, f"collection {name!r} is not served here; served: {known}", "name")
        if target.where is None:
            message = f"collection {name!r} cannot be dropped by this server"
            raise APIError(409, message, "name", "drop_refused")
        where, backend = target.where
        del served[name]
        target.dropped = True
        try:
            await asyncio.to_thread(target.close)
        except Exception:  # closing failed (saving an index): the drop removes what it left anyway
            logger.warning("closing collection %r before its drop failed", name, exc_info=True)
        try:
            await asyncio.to_thread(Collection.drop, where, backend=backend)
        except CollectionNotFoundError as e:
            raise APIError(404, f"collection {name!r} no longer exists: {e}", "name") from e
        except (CollectionError, ValueError, OSError) as e:
            served.setdefault(name, serve_existing(where, settings.models, backend, deferred=True))
            raise APIError(409, f"collection {name!r} was not dropped: {e}", "name", "drop_refused") from e
        except Exception as e:
            served.setdefault(name, serve_existing(where, settings.models, backend, deferred=True))
            if Collection.is_storage_error(e):
                raise APIError(503, f"the collection's database failed: {str(e).strip()}") from e
            raise
        return {"name": name, "dropped": True}
