"""Named numpy arrays in one file, written atomically and read back memory-mapped, verified.

Layout: a magic line, the header's length (8 bytes, little-endian), the header's xxh3-64 digest
(8 bytes), a JSON header (the caller's `meta` and, per array, its dtype, shape, offset and xxh3-64
digest, and the arrays' length), then each array's bytes at a 64-byte aligned offset. Reading maps
the file once, checks every digest over the mapped bytes (one pass over the file, at xxh3's speed)
and hands out read-only views; pages then stay in the page cache for the searches. A file that is
not regular, short or long, has another magic or a digest that does not match, or whose `meta`
disagrees with what the caller expects (`expect`: its collection, its watermark) is refused with
`ArrayFileError` (a damaged derived file is then set aside and rebuilt from its source). A file of
the first format (no digests, magic `MJARRAYS1`) is refused the same way: it cannot be verified.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..._util.atomic import atomic_write
from .verified_file import DamagedIndexFile, UnverifiedFile, checksum, mapped, opened

MAGIC = b"MJARRAYS2\n"
UNVERIFIED = b"MJARRAYS1\n"
ALIGN = 64
_HEAD = len(MAGIC) + 16


class ArrayFileError(DamagedIndexFile):
    """The file is not a whole, verified array file (or not the one expected)."""


class UnverifiedArrayFile(ArrayFileError, UnverifiedFile):
    """An array file of the first format: no checksums."""


def _start(header_length: int) -> int:
    return -(-(_HEAD + header_length) // ALIGN) * ALIGN


def write_arrays(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any] | None = None) -> None:
    """Write `arrays` (and `meta`, JSON) to `path` atomically, flushed to disk (fsync)."""
    parts = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
    layout: dict[str, Any] = {}
    offset = 0
    for name, a in parts.items():
        padded = -(-a.nbytes // ALIGN) * ALIGN  # the padding (zeros) is covered too: every byte is
        digest = checksum(a.tobytes() + bytes(padded - a.nbytes))
        layout[name] = {"dtype": a.dtype.str, "shape": list(a.shape), "offset": offset, "xxh3": digest}
        offset += padded
    header = json.dumps({"meta": meta or {}, "arrays": layout, "bytes": offset}).encode("utf-8")
    start = _start(len(header))
    header_digest = bytes.fromhex(checksum(header))

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(MAGIC + len(header).to_bytes(8, "little") + header_digest + header)
            for name, a in parts.items():
                f.seek(start + layout[name]["offset"])
                f.write(a.tobytes())
            f.truncate(start + offset)

    atomic_write(path, write, fsync=True)


def read_arrays(
    path: Path, expect: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(meta, arrays) of a file written by `write_arrays`, verified; the arrays are read-only maps.
    `expect`: values `meta` must hold (another collection's file, or one renamed, is refused)."""
    try:
        with opened(path) as fd:
            whole = mapped(fd)
    except DamagedIndexFile as e:
        raise ArrayFileError(str(e)) from None
    if whole is None or len(whole) < _HEAD:
        raise ArrayFileError(f"{path}: not an array file (cut short)")
    magic = whole[: len(MAGIC)]
    if magic == UNVERIFIED:
        raise UnverifiedArrayFile(f"{path}: written without checksums (by an older munjang)")
    if magic != MAGIC:
        raise ArrayFileError(f"{path}: not an array file")
    length = int.from_bytes(whole[len(MAGIC) : len(MAGIC) + 8], "little")
    if length > len(whole) - _HEAD:
        raise ArrayFileError(f"{path}: header longer than the file")
    raw = whole[_HEAD : _HEAD + length]
    if checksum(raw) != whole[len(MAGIC) + 8 : _HEAD].hex():
        raise ArrayFileError(f"{path}: header checksum mismatch")
    try:
        header = json.loads(raw.decode("utf-8"))
        layout, meta, size = header["arrays"], header["meta"], int(header["bytes"])
    except (ValueError, KeyError, TypeError) as e:
        raise ArrayFileError(f"{path}: unreadable header") from e
    start = _start(length)
    if any(whole[_HEAD + length : start]):
        raise ArrayFileError(f"{path}: garbled padding after the header")
    if start + size != len(whole):
        raise ArrayFileError(f"{path}: {len(whole)} bytes, its header says {start + size}")
    for key, want in (expect or {}).items():
        if meta.get(key) != want:
            raise ArrayFileError(f"{path}: written for {key} {meta.get(key)!r}, not {want!r}")
    data = np.frombuffer(whole, dtype=np.uint8)
    arrays: dict[str, np.ndarray] = {}
    try:
        for name, spec in layout.items():
            dtype, shape = np.dtype(spec["dtype"]), tuple(int(s) for s in spec["shape"])
            first = start + int(spec["offset"])
            end = first + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if end > len(whole) or first < start:
                raise ArrayFileError(f"{path}: array {name!r} lies past the end of the file")
            padded = first + -(-(end - first) // ALIGN) * ALIGN
            if checksum(memoryview(whole)[first:padded]) != spec["xxh3"]:
                raise ArrayFileError(f"{path}: array {name!r} checksum mismatch")
            arrays[name] = data[first:end].view(dtype).reshape(shape)
    except (TypeError, ValueError, KeyError) as e:
        if isinstance(e, ArrayFileError):
            raise
        raise ArrayFileError(f"{path}: unreadable array layout") from e
    return meta, arrays


def verify_arrays(path: Path, expect: Mapping[str, Any] | None = None) -> str | None:
    """Why the array file at `path` is damaged (None: it is whole, and `expect`'s; or written by
    an older munjang, never used, and removed by the next reader or save)."""
    try:
        read_arrays(path, expect)
    except UnverifiedFile:
        return None
    except (OSError, ArrayFileError) as e:
        return str(e)
    return None
