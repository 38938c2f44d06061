"""The containers office files come in, opened with the errors a folder add reports per file: a zip
(DOCX, PPTX, XLSX, HWPX) that is corrupt, encrypted, wrapped by DRM, of a zip version or method the
standard library cannot read, or a bomb (a member over `ReadLimits.max_member_bytes`, or the whole
over a ratio of its size), checked on the zip's directory before any member is inflated; and OLE
compound files (HWP)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from .document import ReadError
from .limits import DEFAULT_LIMITS, ReadLimits

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
ZIP_MAGIC = b"PK\x03\x04"
# What a whole zip may unpack to, at most.
MAX_UNPACKED_BYTES = 512 * 1024 * 1024
# What a whole zip may unpack to: this many times its own size, at least UNPACKED_FLOOR, at most
# MAX_UNPACKED_BYTES. Office XML deflates 5-30x (a sparse sheet more); deflate bombs reach ~1000x.
MAX_RATIO = 200
UNPACKED_FLOOR = 64 * 1024 * 1024


def unpacked_limit(packed: int) -> int:
    """The most a zip of `packed` bytes may unpack to, in all its members together."""
    return min(MAX_UNPACKED_BYTES, max(UNPACKED_FLOOR, MAX_RATIO * packed))


def open_zip(
    raw: bytes, path: str | Path, kind: str, required: str, limits: ReadLimits = DEFAULT_LIMITS
) -> zipfile.ZipFile:
    """The zip of a `kind` file ("DOCX", ...) that must hold `required`; a ReadError that says why not:
    empty, an OLE container (an encrypted or DRM-protected Office file), not a zip, corrupt, a zip
    version the standard library cannot read, or a member or whole over what it may unpack to. The
    readers hand the bytes to their libraries only after this, so no library inflates a bomb."""
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
    except NotImplementedError as e:  # "zip file version 9.9": a version zipfile cannot read
        raise ReadError(path, f"unsupported {kind} zip ({e})") from None
    except Exception as e:  # BadZipFile, OSError, ValueError, struct.error, ... from a damaged directory
        raise ReadError(path, f"corrupt {kind} (bad zip: {type(e).__name__}: {e})") from None
    if required not in names:
        raise ReadError(path, f"not a {kind} file (no {required} in the zip)")
    for info in archive.infolist():
        if info.file_size > limits.max_member_bytes:
            raise ReadError(
                path,
                f"{info.filename} unpacks to {info.file_size:,} bytes, over the limit of "
                f"{limits.max_member_bytes:,} (the max_member_bytes read limit; a zip bomb?)",
            )
    unpacked = sum(info.file_size for info in archive.infolist())
    if unpacked > unpacked_limit(len(raw)):
        raise ReadError(
            path,
            f"{kind} unpacks to {unpacked} bytes from {len(raw)}, over the limit of "
            f"{unpacked_limit(len(raw))} (a zip bomb?)",
        )
    return archive


def member(archive: zipfile.ZipFile, name: str, path: str | Path, kind: str) -> bytes:
    """One member's bytes (its size was checked by `open_zip`: zipfile reads no more than the
    directory declares); corrupt, encrypted or unreadable members become a ReadError."""
    try:
        info = archive.getinfo(name)
        if info.flag_bits & 0x1:
            raise ReadError(path, f"encrypted {kind} ({name} is password-protected)")
        return archive.read(name)
    except ReadError:
        raise
    except Exception as e:  # BadZipFile (CRC), zlib.error, EOFError, ... from damaged members
        raise ReadError(path, f"corrupt {kind} ({name}: {type(e).__name__}: {e})") from None
