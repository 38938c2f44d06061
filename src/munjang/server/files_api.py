"""Office and other document files over HTTP: the file's bytes (base64 in the JSON body, as every /v1
body is JSON), its type told by content (`ingest.sniff`: `%PDF`, an OLE container with an HWP
FileHeader, a zip holding Contents/section0.xml, word/, ppt/ or xl/ parts), never by its name.

    POST /v1/collections/{name}/files  {"name": "plan.hwp", "content": "<base64>", "id": "...",
                                        "on_conflict": "error" | "skip" | "upsert"}
        -> {"id", "format", "title", "added", "updated", "skipped", "sections", "pages"}

The body limit (`max_body_bytes`) bounds the file; an unreadable file (encrypted, DRM-protected,
corrupt, empty) is a 400 that says why, and nothing is stored.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, StrictStr

from ..errors import MissingExtraError
from ..ingest import ReadError, ReadLimits, read_bytes, sniff
from .access import record
from .compute import ComputeGate
from .errors import APIError
from .settings import ServerSettings
from .text_api import body_schema, parse


class FileRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: StrictStr
    content: StrictStr
    id: StrictStr | None = None
    on_conflict: Literal["error", "skip", "upsert"] = "error"


def decode_file(request: FileRequest) -> tuple[bytes, str]:
    """The upload's bytes and its format by content; 400 naming the field when either is wrong."""
    try:
        raw = base64.b64decode(request.content, validate=True)
    except (binascii.Error, ValueError):
        raise APIError(400, "'content' is not base64", "content") from None
    if not raw:
        raise APIError(400, "'content' is an empty file", "content", "empty_input")
    kind = sniff(raw)
    if kind is None:
        message = (
            "the file's type is not one that can be read "
            "(by content: PDF, HWP, HWPX, DOCX, PPTX, XLSX, HTML, text)"
        )
        raise APIError(400, message, "content", "unsupported_file_type")
    return raw, kind


def add_file_routes(
    router: APIRouter,
    settings: ServerSettings,
    named: Callable[[str], Any],
    read_body: Any,
    gate: ComputeGate,
) -> None:
    """Register the file-upload route on the (key-protected) /v1 router; `named` finds a served
    collection or answers 404. Reading the file runs under `gate`'s bounds, as every computing route."""
    # The file's text is one document: as long as any one input, and within what one request adds.
    limits = ReadLimits(max_chars=min(settings.max_chars_per_input, settings.max_chars_per_add))

    @router.post("/collections/{name}/files", openapi_extra=body_schema(FileRequest))
    async def add_file(name: str, request: Request) -> dict[str, Any]:
        """Read one uploaded file (type by content) and add it as a document with its outline; the
        document may be as long as any one input of the other routes (`max_chars_per_input`)."""
        target = await named(name)
        parsed = parse(FileRequest, await read_body(request, settings.max_body_bytes))
        raw, kind = decode_file(parsed)
        label = PurePosixPath(parsed.name.replace("\\", "/")).name or "upload"
        try:
            doc = await gate.run(
                lambda _: read_bytes(raw, Path(label), kind, parsed.id or label, limits), request
            )
        except (ReadError, MissingExtraError) as e:
            raise APIError(400, str(e), "content", "unreadable_file") from None
        metadata = {**doc.metadata, **({"title": doc.title} if doc.title else {})}
        result = await target.call(
            target.collection.add,
            [doc.id],
            [doc.text],
            [metadata],
            on_conflict=parsed.on_conflict,
            show_progress_bar=False,
        )
        record(request, added=result.added, updated=result.updated, skipped=result.skipped)
        return {
            "id": doc.id,
            "format": kind,
            "title": doc.title,
            "added": result.added,
            "updated": result.updated,
            "skipped": result.skipped,
            "sections": len(doc.metadata.get("sections", [])),
            "pages": doc.metadata.get("pages", doc.metadata.get("slides")),
        }
