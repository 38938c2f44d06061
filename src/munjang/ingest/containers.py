"""The containers office files come in, opened with the errors a folder add reports per file: a zip
(DOCX, PPTX, XLSX, HWPX) that is corrupt, encrypted or wrapped by DRM, and OLE compound files (HWP)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from .document import ReadError

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ZIP_MAGIC = b"PK\x03\x04"
# Zip members larger than this (uncompressed) are refused: a zip bomb would otherwise fill memory.
MAX_MEMBER_BYTES = 512 * 1024 * 1024
# What a whole zip may unpack to: this many times its own size, at least UNPACKED_FLOOR, at most
# MAX_MEMBER_BYTES. Office XML deflates 5-30x (a sparse sheet more); deflate bombs reach ~1000x.
MAX_RATIO = 200
UNPACKED_FLOOR = 64 * 1024 * 1024


def unpacked_limit(packed: int) -> int:
    """The most a zip of `packed` bytes may unpack to, in all its members together."""
    return min(MAX_MEMBER_BYTES, max(UNPACKED_FLOOR, MAX_RATIO * packed))


def open_zip(raw: bytes, path: str | Path, kind: str, required: str) -> zipfile.ZipFile:
    """The zip of a `kind` file ("DOCX", ...) that must hold `required`; a ReadError that says why not:
    empty, an OLE container (an encrypted or DRM-protected Office file), not a zip, corrupt."""
    if not raw:
        raise ReadError(path, "no text (empty file)")
    if raw.startswith(OLE_MAGIC):
        raise ReadError(
            path, f"encrypted or DRM-protected {kind} (an OLE container, not a zip); decrypt it first"
        )
    if not raw.startswith(ZIP_MAGIC):
        raise ReadError(path, f"not a {kind} file (no zip header: DRM-protected or corrupt)")
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise ReadError(path, f"corrupt {kind} (bad zip: {e})") from None
    if required not in names:
        raise ReadError(path, f"not a {kind} file (no {required} in the zip)")
    unpacked = sum(info.file_size for info in archive.infolist())
    if unpacked > unpacked_limit(len(raw)):
        raise ReadError(
            path,
            f"{kind} unpacks to {unpacked} bytes from {len(raw)}, over the limit of "
            f"{unpacked_limit(len(raw))} (a zip bomb?)",
        )
    return archive


def member(archive: zipfile.ZipFile, name: str, path: str | Path, kind: str) -> bytes:
    """One member's bytes; corrupt, encrypted or oversized members become a ReadError."""
    try:
        info = archive.getinfo(name)
        if info.flag_bits & 0x1:
            raise ReadError(path, f"encrypted {kind} ({name} is password-protected)")
        if info.file_size > MAX_MEMBER_BYTES:
            raise ReadError(path, f"{name} unpacks to {info.file_size} bytes, over the limit")
        return archive.read(name)
    except ReadError:
        raise
    except Exception as e:  # BadZipFile (CRC), zlib.error, EOFError, ... from damaged members
        raise ReadError(path, f"corrupt {kind} ({name}: {type(e).__name__}: {e})") from None
