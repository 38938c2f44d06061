"""Snapshots over HTTP (docs/snapshots.md), kept in the collections folder's `.snapshots/NAME/`:

    POST /v1/collections/{name}/snapshots                   take one (read at one commit while
                                                             writes go on); 201 with its manifest
    GET  /v1/collections/{name}/snapshots                   the collection's snapshots
    GET  /v1/collections/{name}/snapshots/{file}            download one
    POST /v1/collections/{name}/snapshots/{file}/restore    {"target": NEW_NAME}: restore it as a
                                                             new served collection (no encoding)

Admin routes (they read or make whole collections), key-protected like every /v1 route. Bounded:
one snapshot or restore at a time per collection (409 `snapshot_busy`), at most
`MAX_SNAPSHOTS` kept per collection (409 `too_many_snapshots`: delete old files first), a snapshot
larger than `MAX_SNAPSHOT_BYTES` is removed and refused (413). Each runs on a thread of its own, so
the collection's searches and writes go on.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict, StrictStr

from ..search import CollectionError
from ..search.collection.collection import Collection
from .collections_api import NAME, serve_existing
from .errors import APIError
from .served_collection import ServedCollection
from .settings import ServerSettings
from .text_api import body_schema, parse

FOLDER = ".snapshots"
FILE = re.compile(r"[0-9]{8}T[0-9]{6}Z(-[0-9]+)?\.snapshot")
MAX_SNAPSHOTS = 20
MAX_SNAPSHOT_BYTES = 64 << 30


def _info_and_close(col: Collection) -> dict[str, Any]:
    try:
        return col.info()
    finally:
        col.close()


class RestoreRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target: StrictStr


def add_snapshot_routes(
    router: APIRouter, settings: ServerSettings, served: dict[str, ServedCollection], read_body: Any
) -> None:
    """Register the snapshot routes on the (key-protected) /v1 router."""
    busy: set[str] = set()

    def folder_of(name: str) -> tuple[ServedCollection, Path]:
        found = served.get(name)
        if found is None:
            raise APIError(404, f"collection {name!r} is not served here", "name")
        if settings.collections_dir is None or found.where is None:
            raise APIError(
                400, "snapshots need a collections folder (start the server with --collections-dir)"
            )
        return found, Path(settings.collections_dir) / FOLDER / name

    def claim(name: str) -> None:
        if name in busy:
            raise APIError(
                409, f"a snapshot of {name!r} is already being taken or restored", "name", "snapshot_busy"
            )
        busy.add(name)

    @router.post("/collections/{name}/snapshots", status_code=201)
    async def take(name: str) -> dict[str, Any]:
        """Take a snapshot of the collection."""
        found, folder = folder_of(name)
        assert found.where is not None
        where, backend = found.where
        if len(list(folder.glob("*.snapshot"))) >= MAX_SNAPSHOTS:
            message = f"{name!r} has {MAX_SNAPSHOTS} snapshots, the limit: delete old ones first"
            raise APIError(409, message, "name", "too_many_snapshots")
        claim(name)
        try:
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            path = folder / f"{stamp}.snapshot"
            n = 0
            while path.exists():
                n += 1
                path = folder / f"{stamp}-{n}.snapshot"

            def export() -> dict[str, Any]:
                with Collection.open(where, backend=backend, readonly=True) as col:
                    return col.export(path, show_progress_bar=False)

            try:
                manifest = await asyncio.to_thread(export)
            except CollectionError as e:
                raise APIError(409, f"the snapshot of {name!r} failed: {e}", "name") from e
            size = path.stat().st_size
            if size > MAX_SNAPSHOT_BYTES:
                path.unlink()
                raise APIError(413, f"the snapshot of {name!r} is {size} bytes, over {MAX_SNAPSHOT_BYTES}")
        finally:
            busy.discard(name)
        return {"name": name, "snapshot": path.name, "bytes": size, "counts": manifest["counts"]}

    @router.get("/collections/{name}/snapshots")
    async def list_snapshots(name: str) -> dict[str, Any]:
        """The collection's snapshots, oldest first."""
        _, folder = folder_of(name)
        files = sorted(p for p in folder.glob("*.snapshot") if FILE.fullmatch(p.name))
        return {"object": "list", "data": [{"snapshot": p.name, "bytes": p.stat().st_size} for p in files]}

    def snapshot_file(name: str, file: str) -> Path:
        _, folder = folder_of(name)
        path = folder / file
        if not FILE.fullmatch(file) or not path.is_file():
            raise APIError(404, f"no snapshot {file!r} of {name!r}", "snapshot")
        return path

    @router.get("/collections/{name}/snapshots/{file}")
    async def download(name: str, file: str) -> FileResponse:
        """The snapshot file."""
        return FileResponse(snapshot_file(name, file), media_type="application/x-tar", filename=file)

    @router.post(
        "/collections/{name}/snapshots/{file}/restore",
        status_code=201,
        openapi_extra=body_schema(RestoreRequest),
    )
    async def restore(name: str, file: str, request: Request) -> dict[str, Any]:
        """Restore a snapshot as a new collection of the collections folder, served at once."""
        parsed = parse(RestoreRequest, await read_body(request, settings.max_body_bytes))
        path = snapshot_file(name, file)
        target = parsed.target
        if not NAME.fullmatch(target):
            raise APIError(400, "'target' must be 1-64 letters, digits, '_', '-' or '.'", "target")
        if target in served:
            raise APIError(409, f"collection {target!r} already exists", "target", "already_exists")
        if len(served) >= settings.max_collections:
            raise APIError(400, f"this server serves {len(served)} collections, its limit", "target")
        assert settings.collections_dir is not None
        location = Path(settings.collections_dir) / target
        claim(name)
        try:
            try:
                col = await asyncio.to_thread(Collection.import_, path, location, show_progress_bar=False)
            except CollectionError as e:
                raise APIError(409, f"the restore of {file!r} failed: {e}", "target") from e
            info = await asyncio.to_thread(_info_and_close, col)
            served[target] = await asyncio.to_thread(serve_existing, location, settings.models, None)
        finally:
            busy.discard(name)
        return {"name": target, "documents": info["documents"], "passages": info["passages"]}
