"""The snapshot file: one uncompressed tar holding Parquet shards and a manifest (docs/snapshots.md).

Layout (format "munjang-snapshot", version 1):
- `passages/NNNNNN.parquet`: one row per passage, in label order: id, chunk, start, end, text,
  metadata (JSON), text_hash, doc_hash, tokens (JSON, BM25's), source (the whole text of a document
  stored as several passages, on its first passage; else null) and vector (float32, the
  collection's `dim`);
- `images/<sha256>.<ext>` (an image collection's): each image file its passages name, under its
  content-hash name (`image_files.py`), at most `MAX_IMAGE_BYTES` each;
- `manifest.json`, last: the format and its version, the munjang version, the collection's
  configuration (model, dim, metric, index, tokenizer, chunking), the model's weights checksum,
  the counts, the watermark it was read at, each shard's name, rows, bytes and SHA-256 and each
  image's name, bytes and SHA-256, with a content checksum over them.

A reader checks everything before it uses anything (`SnapshotReader`): the members are plain files
with the expected names only (no path can leave the archive: nothing is extracted by name), the
manifest's format and version are ones it reads, and every shard's and image's size and SHA-256
match (an image's also its name); a file
that fails any of these is refused with one `SnapshotError` line.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tarfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import ModelNotFoundError, MunjangError
from ...images import MAX_IMAGE_BYTES
from ..backends.base import CollectionError
from .image_files import STORED_NAME

FORMAT = "munjang-snapshot"
VERSION = 1
MANIFEST = "manifest.json"
SHARD = re.compile(r"passages/[0-9]{6}\.parquet")
IMAGES = "images/"
# A manifest is a few kilobytes per thousand shards: one larger than this is not ours.
MAX_MANIFEST_BYTES = 16 << 20
# The weight files of a model folder whose bytes make its checksum.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".onnx", ".npy", ".npz")
_CHUNK = 1 << 20


class SnapshotError(CollectionError):
    """A snapshot file that cannot be used (truncated, altered, of a newer format, of other weights):
    refused before anything is written."""


def weights_checksum(model: str) -> str | None:
    """SHA-256 over the weight files of the collection's model (`model`: as a collection records
    it), read from its local folder without loading it; None where it has none here (a remote model,
    or a hub model not downloaded)."""
    from ...models.hub import resolve_model_path

    try:
        folder = resolve_model_path(None if model == "default" else model, local_files_only=True)
    except (MunjangError, ModelNotFoundError, OSError, ValueError):
        return None
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix in WEIGHT_SUFFIXES
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(folder).as_posix()}\n".encode())
        digest.update(file_sha256(path).encode())
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def content_checksum(shards: Sequence[dict[str, Any]], images: Sequence[dict[str, Any]] = ()) -> str:
    """The checksum of a snapshot's content: SHA-256 over its shards' names and checksums, in order,
    then its images' (none: the checksum of a snapshot without images, as before they were carried)."""
    digest = hashlib.sha256()
    for shard in shards:
        digest.update(f"{shard['name']} {shard['rows']} {shard['sha256']}\n".encode())
    for image in images:
        digest.update(f"{image['name']} {image['bytes']} {image['sha256']}\n".encode())
    return digest.hexdigest()


def _is_image(name: str) -> bool:
    return name.startswith(IMAGES) and bool(STORED_NAME.match(name[len(IMAGES) :]))


def _stem(name: str) -> str:
    """The content hash an image's stored name carries."""
    return name[len(IMAGES) :].split(".")[0]


class SnapshotWriter:
    """Writes a snapshot file shard by shard under a temporary name beside `path`, which `finish`
    renames into place: a killed export leaves no file at `path` (and an earlier one whole)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.partial")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tar = tarfile.open(self.tmp, "w", format=tarfile.PAX_FORMAT)  # noqa: SIM115 (closed by finish or abort)
        self.shards: list[dict[str, Any]] = []
        self.images: list[dict[str, Any]] = []

    def add_shard(self, table: Any) -> None:
        """One Parquet shard of passages (a pyarrow Table)."""
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        pq.write_table(table, buffer, compression="zstd")
        data = buffer.getvalue()
        name = f"passages/{len(self.shards):06d}.parquet"
        self._add(name, data)
        self.shards.append(
            {
                "name": name,
                "rows": table.num_rows,
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )

    def add_image(self, stored: str, data: bytes) -> None:
        """One image file of the collection, under its stored (content-hash) name."""
        name = IMAGES + stored
        self._add(name, data)
        self.images.append({"name": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})

    def _add(self, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
        self._tar.addfile(info, io.BytesIO(data))

    def finish(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Write the manifest (with the shards and the content checksum), close, rename into place."""
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            **manifest,
            "shards": self.shards,
            "images": self.images,
            "content_sha256": content_checksum(self.shards, self.images),
        }
        self._add(MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=1).encode())
        self._tar.close()
        with open(self.tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(self.tmp, self.path)
        return manifest

    def abort(self) -> None:
        self._tar.close()
        self.tmp.unlink(missing_ok=True)


class SnapshotReader:
    """A snapshot file, checked whole on opening (see the module docstring); then its shards, each
    read as a pyarrow Table."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise SnapshotError(f"{self.path}: no such snapshot file")
        try:
            self._tar = tarfile.open(self.path, "r:")  # noqa: SIM115 (closed by close)
            members = self._tar.getmembers()
        except (tarfile.TarError, EOFError) as e:
            raise SnapshotError(
                f"{self.path}: not a whole snapshot file (truncated or not a tar: {e})"
            ) from None
        try:
            self.manifest = self._check(members)
        except (KeyError, TypeError, AttributeError) as e:  # a manifest of the wrong shape
            self._tar.close()
            raise SnapshotError(f"{self.path}: its manifest is not a munjang snapshot's ({e!r})") from None
        except BaseException:
            self._tar.close()
            raise

    def _check(self, members: list[tarfile.TarInfo]) -> dict[str, Any]:
        where = self.path
        for member in members:
            expected = member.name == MANIFEST or SHARD.fullmatch(member.name) or _is_image(member.name)
            if not member.isfile() or not expected:
                raise SnapshotError(
                    f"{where}: unexpected archive member {member.name!r}: not a munjang snapshot"
                )
        self._members = {m.name: m for m in members}
        if len(self._members) != len(members):
            raise SnapshotError(f"{where}: an archive member appears twice: not a munjang snapshot")
        found = self._members.get(MANIFEST)
        if found is None:
            raise SnapshotError(f"{where}: no manifest (truncated, or not a munjang snapshot)")
        if found.size > MAX_MANIFEST_BYTES:
            raise SnapshotError(f"{where}: a manifest of {found.size} bytes: not a munjang snapshot")
        try:
            manifest = json.loads(self._read(found))
        except (ValueError, UnicodeDecodeError) as e:
            raise SnapshotError(f"{where}: its manifest is not JSON ({e})") from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise SnapshotError(f"{where}: not a munjang snapshot (format {manifest.get('format')!r})")
        version = manifest.get("version")
        if not isinstance(version, int) or version > VERSION:
            raise SnapshotError(
                f"{where}: snapshot format version {version!r}; this munjang reads up to {VERSION} "
                "(upgrade munjang to restore it)"
            )
        shards, images = manifest.get("shards"), manifest.get("images", [])
        if (
            not isinstance(shards, list)
            or not isinstance(images, list)
            or content_checksum(shards, images) != manifest.get("content_sha256")
        ):
            raise SnapshotError(f"{where}: the manifest's content checksum does not match its shards")
        if {s["name"] for s in shards + images} != set(self._members) - {MANIFEST}:
            raise SnapshotError(f"{where}: its shards are not those the manifest lists (truncated?)")
        for image in images:
            name = image["name"]
            if not _is_image(name) or image["bytes"] > MAX_IMAGE_BYTES or image["sha256"] != _stem(name):
                raise SnapshotError(f"{where}: {name!r} is not an image file a snapshot carries")
        for entry in shards + images:
            member = self._members[entry["name"]]
            if member.size != entry["bytes"] or self._sha256(member) != entry["sha256"]:
                raise SnapshotError(
                    f"{where}: {entry['name']} does not match its checksum (the file was altered or damaged)"
                )
        return manifest

    def _read(self, member: tarfile.TarInfo) -> bytes:
        f = self._tar.extractfile(member)
        if f is None:
            raise SnapshotError(f"{self.path}: cannot read {member.name}")
        data = f.read()
        if len(data) != member.size:
            raise SnapshotError(f"{self.path}: {member.name} is cut short (truncated file)")
        return data

    def _sha256(self, member: tarfile.TarInfo) -> str:
        f = self._tar.extractfile(member)
        if f is None:
            raise SnapshotError(f"{self.path}: cannot read {member.name}")
        digest, size = hashlib.sha256(), 0
        while block := f.read(_CHUNK):
            digest.update(block)
            size += len(block)
        if size != member.size:
            raise SnapshotError(f"{self.path}: {member.name} is cut short (truncated file)")
        return digest.hexdigest()

    def shards(self, start: int = 0) -> Iterator[Any]:
        """The shards from number `start` on, each as a pyarrow Table (one in memory at a time)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        for shard in self.manifest["shards"][start:]:
            yield pq.read_table(pa.BufferReader(self._read(self._members[shard["name"]])))

    def images(self) -> Iterator[tuple[str, bytes]]:
        """The image files (stored name, bytes), one in memory at a time."""
        for image in self.manifest.get("images", []):
            yield image["name"][len(IMAGES) :], self._read(self._members[image["name"]])

    def close(self) -> None:
        self._tar.close()

    def __enter__(self) -> SnapshotReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
