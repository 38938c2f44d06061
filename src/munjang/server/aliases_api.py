"""Aliases over HTTP, for the collections folder (`search/collection/aliases.py`):

    GET    /v1/aliases          {"data": [{"alias", "collection"}]}
    PUT    /v1/aliases/{alias}  {"collection": NAME}: point it at a served collection of the folder,
                                 atomically (the requests already running finish where they began)
    DELETE /v1/aliases/{alias}  remove it (404 when there is none)

Admin routes: they change what every client's name means. Key-protected like every /v1 route.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, StrictStr

from ..search import CollectionError, CollectionNotFoundError
from ..search.collection.aliases import read_aliases, remove_alias, set_alias
from .errors import APIError
from .settings import ServerSettings
from .text_api import body_schema, parse


class AliasRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    collection: StrictStr


def alias_target(settings: ServerSettings, name: str) -> str | None:
    """The collection the alias `name` points at now (None: no such alias, or no collections folder)."""
    if settings.collections_dir is None or "/" in name or name.startswith("."):
        return None
    try:
        return read_aliases(Path(settings.collections_dir)).get(name)
    except CollectionError as e:
        raise APIError(503, f"the aliases cannot be read: {e}") from e


def _root(settings: ServerSettings) -> Path:
    if settings.collections_dir is None:
        raise APIError(400, "aliases need a collections folder (start the server with --collections-dir)")
    return Path(settings.collections_dir)


def add_alias_routes(
    router: APIRouter, settings: ServerSettings, served: dict[str, Any], read_body: Any
) -> None:
    """Register the alias routes on the (key-protected) /v1 router."""

    @router.get("/aliases")
    async def list_aliases() -> dict[str, Any]:
        """Every alias and the collection it points at."""
        aliases = await asyncio.to_thread(read_aliases, _root(settings))
        return {"object": "list", "data": [{"alias": a, "collection": c} for a, c in sorted(aliases.items())]}

    @router.put("/aliases/{alias}", openapi_extra=body_schema(AliasRequest))
    async def put_alias(alias: str, request: Request) -> dict[str, Any]:
        """Point `alias` at a collection; the switch is one file renamed into place."""
        parsed = parse(AliasRequest, await read_body(request, settings.max_body_bytes))
        if alias in served:
            raise APIError(409, f"{alias!r} is a collection: an alias cannot take its name", "alias")
        if parsed.collection not in served:
            raise APIError(404, f"collection {parsed.collection!r} is not served here", "collection")
        try:
            before = await asyncio.to_thread(set_alias, _root(settings), alias, parsed.collection)
        except CollectionNotFoundError as e:
            raise APIError(404, str(e), "collection") from e
        except CollectionError as e:
            raise APIError(400, str(e), "alias") from e
        return {"alias": alias, "collection": parsed.collection, "previous": before}

    @router.delete("/aliases/{alias}")
    async def delete_alias(alias: str) -> dict[str, Any]:
        """Remove `alias` (the collection it pointed at is kept)."""
        if not await asyncio.to_thread(remove_alias, _root(settings), alias):
            raise APIError(404, f"no alias {alias!r}", "alias")
        return {"alias": alias, "removed": True}
