"""The images of an image collection: each file the collection stores, copied into its folder under
its content hash (`images/<sha256>.<ext>`), and how an image document is encoded.

An image document is an ordinary document whose metadata names its stored file (`IMAGE_FIELD`); its
text is a caption (the file name unless given), which BM25 indexes and the results show. Encoding
goes through one function, `document_input`: an image document becomes the stored file's path, which
a CLIP encoder reads as an image; every other document stays its text. The embedding-cache key of an
image is its content hash, so the same picture under two names is encoded once.

Files are read only through `ImageFiles.path`, which accepts nothing but a content-hash name inside
the images folder: a document whose metadata names any other path serves and encodes nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from ..._util.atomic import atomic_write
from ...errors import ImageError
from ...images import IMAGE_SUFFIXES, MAX_IMAGE_BYTES, open_image_bytes

# The metadata key that marks an image document and names its stored file.
IMAGE_FIELD = "image"
STORED_NAME = re.compile(r"^[0-9a-f]{64}\.(" + "|".join(s.lstrip(".") for s in IMAGE_SUFFIXES) + r")$")


class ImageFiles:
    """The content-addressed image files of one collection folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def of_collection(cls, collection_folder: Path | None) -> ImageFiles | None:
        """The images of a collection kept in a folder (its `images/`); None for one kept elsewhere
        (a database), which stores no image files."""
        return None if collection_folder is None else cls(collection_folder / "images")

    def put(self, source: Path | bytes, suffix: str | None = None, max_bytes: int = MAX_IMAGE_BYTES) -> str:
        """Check that `source` (a file, or bytes with their `suffix`) is a readable image and store it;
        returns the stored name. Raises ImageError naming the source when it is not."""
        name = str(source) if isinstance(source, Path) else "image"
        if isinstance(source, Path):
            suffix = source.suffix
            if not source.is_file():
                raise ImageError(f"{source}: no such image file")
            if source.stat().st_size > max_bytes:
                raise ImageError(f"{source}: over the {max_bytes}-byte image limit")
            data = source.read_bytes()
        else:
            data = source
        suffix = (suffix or "").lower()
        if suffix not in IMAGE_SUFFIXES:
            raise ImageError(
                f"{name}: {suffix or 'no suffix'} is not an image type ({', '.join(IMAGE_SUFFIXES)})"
            )
        open_image_bytes(data, name, max_bytes)  # decodes: a broken file fails here, before it is stored
        stored = hashlib.sha256(data).hexdigest() + suffix
        target = self.folder / stored
        if not target.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write(target, lambda tmp: tmp.write_bytes(data))
        return stored

    def put_stored(self, stored: str, data: bytes) -> None:
        """Store `data` under the name it was stored by elsewhere (a restore): the name must be one
        and its hash the data's, else ImageError; a file already there is kept."""
        if not STORED_NAME.match(stored) or hashlib.sha256(data).hexdigest() != stored.split(".")[0]:
            raise ImageError(f"{stored!r}: not the content-hash name of these bytes")
        target = self.folder / stored
        if not target.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write(target, lambda tmp: tmp.write_bytes(data), fsync=True)

    def path(self, stored: Any) -> Path | None:
        """The file of a stored name, or None for anything that is not one (or is missing)."""
        if not isinstance(stored, str) or not STORED_NAME.match(stored):
            return None
        file = self.folder / stored
        return file if file.is_file() else None


def image_name(metadata: str | dict[str, Any]) -> str | None:
    """The stored image name of a document's metadata (a dict, or the JSON stored), None for text."""
    meta = json.loads(metadata) if isinstance(metadata, str) else metadata
    value = meta.get(IMAGE_FIELD) if isinstance(meta, dict) else None
    return value if isinstance(value, str) and STORED_NAME.match(value) else None


def document_input(text: str, metadata: str, images: ImageFiles | None) -> str | Path:
    """What the encoder reads for a document: its stored image file, or its text."""
    name = image_name(metadata)
    path = images.path(name) if images is not None and name is not None else None
    return path if path is not None else text


def input_key(value: str | Path, text_key: str) -> str:
    """The embedding-cache key of an encoder input: an image's content hash, else `text_key`."""
    return "image:" + value.stem if isinstance(value, Path) else text_key


def image_documents(
    images: ImageFiles,
    sources: list[Path | bytes],
    ids: list[str],
    metadata: list[dict[str, Any] | None],
    captions: list[str | None],
    suffixes: list[str | None],
) -> tuple[list[str], list[str], list[dict[str, Any]], list[str]]:
    """Store each image and make its document (id, caption text, metadata naming the stored file);
    an image that cannot be read is left out and reported (the messages, in order), not raised."""
    out_ids: list[str] = []
    texts: list[str] = []
    metas: list[dict[str, Any]] = []
    failures: list[str] = []
    if not len(sources) == len(ids) == len(metadata) == len(captions) == len(suffixes):
        raise ValueError(
            f"{len(sources)} images for {len(ids)} ids, {len(metadata)} metadata, {len(captions)} captions"
        )
    for source, doc_id, meta, caption, suffix in zip(sources, ids, metadata, captions, suffixes, strict=True):
        try:
            stored = images.put(source, suffix)
        except ImageError as e:
            failures.append(str(e))
            continue
        name = source.name if isinstance(source, Path) else doc_id
        out_ids.append(doc_id)
        texts.append(caption or name)
        metas.append({**(meta or {}), IMAGE_FIELD: stored, "file": name})
    return out_ids, texts, metas, failures
