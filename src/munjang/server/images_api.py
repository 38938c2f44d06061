"""Images over HTTP: an image query for a collection search (base64 in the JSON body), and a stored
image document's file or thumbnail.

    GET /v1/collections/{name}/images/{id}?thumbnail=N   the image of document `id` (a PNG thumbnail
                                                          at most N pixels on a side, when N is given)

A file is reached only through a stored document's id: the collection maps it to a content-hash name
inside its own images folder (`search/image_files.py`), so no request names a path.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Response

from ..errors import ImageError
from ..images import MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, open_image_bytes
from ..search.collection.image_files import image_name
from .errors import APIError

DATA_URI = re.compile(r"^data:image/[a-z0-9.+-]+;base64,", re.IGNORECASE)
MEDIA_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".gif": "image/gif",
    ".bmp": "image/bmp",
}
MAX_THUMBNAIL = 1024


def check_image_size(data: str, max_bytes: int = MAX_IMAGE_BYTES) -> None:
    """400 naming `image` when its base64 is longer than `max_bytes` of image can take (no decoding)."""
    if len(data) > (max_bytes // 3 + 1) * 4 + 64:  # room for a data: URI's prefix
        raise APIError(400, f"'image' is over the {max_bytes}-byte image limit", "image")


def decode_image_query(
    data: str, max_bytes: int = MAX_IMAGE_BYTES, max_pixels: int = MAX_IMAGE_PIXELS
) -> Any:
    """The PIL image of a request's `image` (base64, or a data: URI); 400 naming `image` when it is
    not base64, too large (bytes, or pixels, read from its header before decoding), or not a
    readable image."""
    encoded = DATA_URI.sub("", data.strip(), count=1)
    if len(encoded) > (max_bytes // 3 + 1) * 4:
        raise APIError(400, f"'image' is over the {max_bytes}-byte image limit", "image")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise APIError(400, "'image' is not base64 (or a data:image/...;base64, URI)", "image") from None
    try:
        return open_image_bytes(raw, "'image'", max_bytes, max_pixels)
    except ImageError as e:
        raise APIError(400, str(e), "image") from None


def check_image_collection(collection: Any, name: str) -> None:
    """400 when a collection's model cannot encode an image query."""
    if getattr(collection.encoder, "clip", None) is None:
        raise APIError(
            400, f"collection {name!r} has a text model: an image query needs a CLIP model", "image"
        )


def thumbnail_png(data: bytes, size: int) -> bytes:
    """A PNG of the image at most `size` pixels on its longer side (aspect kept)."""
    image = open_image_bytes(data)
    image.thumbnail((size, size))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def add_image_routes(router: APIRouter, named: Callable[[str], Any]) -> None:
    """Register the stored-image route on the (key-protected) /v1 router; `named` finds a served
    collection or answers 404."""

    @router.get("/collections/{name}/images/{doc_id:path}", response_class=Response)
    async def document_image(name: str, doc_id: str, thumbnail: int | None = None) -> Response:
        """The stored image of an image document (a PNG thumbnail with `thumbnail`=N pixels)."""
        if thumbnail is not None and not 16 <= thumbnail <= MAX_THUMBNAIL:
            raise APIError(400, f"'thumbnail' must be 16 to {MAX_THUMBNAIL} pixels", "thumbnail")
        target = await named(name)

        def read(collection: Any) -> tuple[bytes, str]:
            document = collection.get([doc_id])[0]
            if document is None:
                raise APIError(404, f"no document {doc_id!r} in collection {name!r}", "doc_id")
            stored = image_name(document.metadata)
            path = collection.images.path(stored) if collection.images is not None and stored else None
            if path is None:
                raise APIError(404, f"document {doc_id!r} is not an image document", "doc_id")
            data = path.read_bytes()
            if thumbnail is not None:
                return thumbnail_png(data, thumbnail), "image/png"
            return data, MEDIA_TYPES[path.suffix]

        content, media_type = await target.read(read)
        return Response(content, media_type=media_type, headers={"Cache-Control": "private, max-age=3600"})


def holds_images(collection: Any) -> bool:
    """Whether a collection has stored image documents (what the web page's image tab lists)."""
    images = collection.images
    return images is not None and images.folder.is_dir() and any(images.folder.iterdir())
