"""Aliases over HTTP, for the server's collections folder and database (`search/collection/aliases.py`):

    GET    /v1/aliases          {"data": [{"alias", "collection"}]}
    PUT    /v1/aliases/{alias}  {"collection": NAME}: point it at a served collection of the folder
                                 or database, atomically (the requests already running finish where
                                 they began); the alias is kept where that collection lives
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


def _places(settings: ServerSettings) -> list[Path | str]:
    """Where this server keeps aliases: its collections folder, then its database."""
    places: list[Path | str] = []
    if settings.collections_dir is not None:
        places.append(Path(settings.collections_dir))
    if settings.collections_db is not None:
        places.append(settings.collections_db)
    return places


def _read(place: Path | str) -> dict[str, str]:
    try:
        return read_aliases(place)
    except CollectionError as e:
        raise APIError(503, f"the aliases cannot be read: {e}") from e


def alias_target(settings: ServerSettings, name: str) -> str | None:
    """The collection the alias `name` points at now (None: no such alias, or no place for aliases)."""
    if "/" in name or name.startswith("."):
        return None
    for place in _places(settings):
        target = _read(place).get(name)
        if target is not None:
            return target
    return None


def _place_of(settings: ServerSettings, collection: Any) -> Path | str:
    """The place of a served collection where its aliases are kept: the server's folder or database."""
    location, backend = collection.where or (None, None)
    if backend is not None and backend == settings.collections_db:
        return backend
    folder = settings.collections_dir
    if backend is None and folder is not None and Path(location or "").parent == Path(folder):
        return Path(folder)
    raise APIError(
        400,
        "aliases point at collections of the server's --collections-dir or --collections-db",
        "collection",
    )


def add_alias_routes(
    router: APIRouter, settings: ServerSettings, served: dict[str, Any], read_body: Any
) -> None:
    """Register the alias routes on the (key-protected) /v1 router."""

    @router.get("/aliases")
    async def list_aliases() -> dict[str, Any]:
        """Every alias and the collection it points at."""
        if not _places(settings):
            raise APIError(
                400, "aliases need a collections folder or database (--collections-dir, --collections-db)"
            )
        aliases: dict[str, str] = {}
        for place in reversed(_places(settings)):  # the folder's win, as when they are resolved
            aliases.update(await asyncio.to_thread(_read, place))
        return {"object": "list", "data": [{"alias": a, "collection": c} for a, c in sorted(aliases.items())]}

    @router.put("/aliases/{alias}", openapi_extra=body_schema(AliasRequest))
    async def put_alias(alias: str, request: Request) -> dict[str, Any]:
        """Point `alias` at a collection; the switch is atomic where the collection lives."""
        parsed = parse(AliasRequest, await read_body(request, settings.max_body_bytes))
        if alias in served:
            raise APIError(409, f"{alias!r} is a collection: an alias cannot take its name", "alias")
        if parsed.collection not in served:
            raise APIError(404, f"collection {parsed.collection!r} is not served here", "collection")
        place = _place_of(settings, served[parsed.collection])
        for other in _places(settings):
            if other != place and alias in await asyncio.to_thread(_read, other):
                message = f"{alias!r} is an alias of another place of this server's: remove it there first"
                raise APIError(409, message, "alias")
        try:
            before = await asyncio.to_thread(set_alias, place, alias, parsed.collection)
        except CollectionNotFoundError as e:
            raise APIError(404, str(e), "collection") from e
        except CollectionError as e:
            raise APIError(400, str(e), "alias") from e
        return {"alias": alias, "collection": parsed.collection, "previous": before}

    @router.delete("/aliases/{alias}")
    async def delete_alias(alias: str) -> dict[str, Any]:
        """Remove `alias` (the collection it pointed at is kept)."""
        for place in _places(settings):
            if await asyncio.to_thread(remove_alias, place, alias):
                return {"alias": alias, "removed": True}
        raise APIError(404, f"no alias {alias!r}", "alias")
