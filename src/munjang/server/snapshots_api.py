"""Snapshots over HTTP (docs/snapshots.md), kept in the collections folder's `.snapshots/NAME/`:

    POST   /v1/collections/{name}/snapshots                  take one (read at one commit while
                                                              writes go on); 201 with its manifest
    GET    /v1/collections/{name}/snapshots                  the collection's snapshots
    GET    /v1/collections/{name}/snapshots/{file}           download one
    DELETE /v1/collections/{name}/snapshots/{file}           delete one
    POST   /v1/collections/{name}/snapshots/{file}/restore   {"target": NEW_NAME}: restore it as a
                                                              new served collection (no encoding)
    POST   /v1/collections/{name}/restore                    the body an archive (application/x-tar):
                                                              restore it as the new collection {name}

Admin routes (they read or make whole collections), key-protected like every /v1 route. Bounded:
one snapshot, deletion or restore at a time per collection (409 `snapshot_busy`), at most
`MAX_SNAPSHOTS` kept per collection (409 `too_many_snapshots`: delete old files first), a snapshot
or an uploaded archive larger than `settings.max_snapshot_bytes` is removed and refused (413; an
upload as soon as its bytes pass the limit). An upload is streamed to a temporary file under
`.snapshots/.uploads/`, checked whole (`SnapshotReader`) before anything is made, and removed at the
end; a bad archive is a 400 `bad_snapshot`, and a restore that fails part-way drops what it made.
Each runs on a thread of its own, so the collection's searches and writes go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import time
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict, StrictStr

from ..search import CollectionError
from ..search.collection.collection import Collection
from ..search.collection.snapshot_format import SnapshotError
from .body_file import receive_to_file
from .collections_api import NAME, serve_existing
from .errors import APIError
from .served_collection import ServedCollection
from .settings import ServerSettings
from .text_api import body_schema, parse

FOLDER = ".snapshots"
UPLOADS = ".uploads"  # in FOLDER: archives being received
FILE = re.compile(r"[0-9]{8}T[0-9]{6}Z(-[0-9]+)?\.snapshot")
MAX_SNAPSHOTS = 20


def _restore(path: Path, location: Path) -> dict[str, Any]:
    """Import the snapshot `path` as the new folder collection `location`; its info. Whatever a
    failed import made is dropped (the file is checked whole before anything is made)."""
    try:
        col = Collection.import_(path, location, show_progress_bar=False)
    except BaseException:
        if location.exists():  # made by this import: the route refuses a location already there
            with contextlib.suppress(CollectionError):
                Collection.drop(location)
        raise
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

    def claim(*names: str) -> None:
        for name in names:
            if name in busy:
                message = f"a snapshot of {name!r} is already being taken, deleted or restored"
                raise APIError(409, message, "name", "snapshot_busy")
        busy.update(names)

    def new_location(target: str, field: str) -> Path:
        """The folder of the new collection `target`, refused when it cannot be made here."""
        if settings.collections_dir is None:
            raise APIError(
                400, "restores need a collections folder (start the server with --collections-dir)"
            )
        if not NAME.fullmatch(target):
            raise APIError(400, f"{field!r} must be 1-64 letters, digits, '_', '-' or '.'", field)
        location = Path(settings.collections_dir) / target
        if target in served or location.exists():
            raise APIError(409, f"collection {target!r} already exists", field, "already_exists")
        if len(served) >= settings.max_collections:
            raise APIError(400, f"this server serves {len(served)} collections, its limit", field)
        return location

    async def restore_as(path: Path, target: str, location: Path, field: str) -> dict[str, Any]:
        """Restore the snapshot `path` as the served collection `target`; the route's answer."""
        try:
            info = await asyncio.to_thread(_restore, path, location)
        except SnapshotError as e:
            raise APIError(400, f"not a snapshot this server can restore: {e}", field, "bad_snapshot") from e
        except CollectionError as e:
            raise APIError(409, f"the restore into {target!r} failed: {e}", field) from e
        served[target] = await asyncio.to_thread(serve_existing, location, settings.models, None)
        return {"name": target, "documents": info["documents"], "passages": info["passages"]}

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
            limit = settings.max_snapshot_bytes
            if size > limit:
                path.unlink()
                raise APIError(413, f"the snapshot of {name!r} is {size} bytes, over {limit}")
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

    @router.delete("/collections/{name}/snapshots/{file}")
    async def delete(name: str, file: str) -> dict[str, Any]:
        """Delete a snapshot file (not while one of the collection's snapshots is taken or restored)."""
        path = snapshot_file(name, file)
        claim(name)
        try:
            await asyncio.to_thread(path.unlink)
        finally:
            busy.discard(name)
        return {"snapshot": file, "deleted": True}

    @router.post(
        "/collections/{name}/snapshots/{file}/restore",
        status_code=201,
        openapi_extra=body_schema(RestoreRequest),
    )
    async def restore(name: str, file: str, request: Request) -> dict[str, Any]:
        """Restore a snapshot as a new collection of the collections folder, served at once."""
        parsed = parse(RestoreRequest, await read_body(request, settings.max_body_bytes))
        path = snapshot_file(name, file)
        location = new_location(parsed.target, "target")
        claim(name, parsed.target)
        try:
            return await restore_as(path, parsed.target, location, "target")
        finally:
            busy.difference_update((name, parsed.target))

    @router.post("/collections/{name}/restore", status_code=201)
    async def restore_upload(name: str, request: Request) -> dict[str, Any]:
        """Restore the uploaded snapshot archive (the body) as the new collection `name`, served at once."""
        location = new_location(name, "name")
        claim(name)
        upload = location.parent / FOLDER / UPLOADS / f"{name}.{os.getpid()}.{secrets.token_hex(4)}.partial"
        try:
            await receive_to_file(request, upload, settings.max_snapshot_bytes)
            return await restore_as(upload, name, location, "name")
        finally:
            upload.unlink(missing_ok=True)
            busy.discard(name)
