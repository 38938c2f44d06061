"""Named numpy arrays in one file, written atomically and read back memory-mapped.

Layout: a magic line, the header's length (8 bytes, little-endian), a JSON header (the caller's
`meta` and, per array, its dtype, shape and offset), then each array's bytes at a 64-byte aligned
offset. Reading maps the file once and hands out read-only views: opening costs the header, not
the arrays; pages are read when a search touches them. A file that is short, has another magic or
an unreadable header, or whose arrays would lie past its end is refused with `ArrayFileError`
(a damaged derived file is then rebuilt from its source).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..._util.atomic import atomic_write

MAGIC = b"MJARRAYS1\n"
ALIGN = 64


class ArrayFileError(ValueError):
    """The file is not a whole array file."""


def write_arrays(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any] | None = None) -> None:
    """Write `arrays` (and `meta`, JSON) to `path` atomically, flushed to disk (fsync)."""
    parts = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
    layout: dict[str, Any] = {}
    offset = 0
    for name, a in parts.items():
        layout[name] = {"dtype": a.dtype.str, "shape": list(a.shape), "offset": offset}
        offset += -(-a.nbytes // ALIGN) * ALIGN
    header = json.dumps({"meta": meta or {}, "arrays": layout}).encode("utf-8")
    start = -(-(len(MAGIC) + 8 + len(header)) // ALIGN) * ALIGN

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(MAGIC + len(header).to_bytes(8, "little") + header)
            for name, a in parts.items():
                f.seek(start + layout[name]["offset"])
                f.write(a.tobytes())
            f.truncate(start + offset)

    atomic_write(path, write, fsync=True)


def read_arrays(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(meta, arrays) of a file written by `write_arrays`; the arrays are read-only memory maps."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(len(MAGIC) + 8)
        if len(head) < len(MAGIC) + 8 or head[: len(MAGIC)] != MAGIC:
            raise ArrayFileError(f"{path}: not an array file")
        length = int.from_bytes(head[len(MAGIC) :], "little")
        if length > size:
            raise ArrayFileError(f"{path}: header longer than the file")
        try:
            header = json.loads(f.read(length).decode("utf-8"))
            layout, meta = header["arrays"], header["meta"]
        except (ValueError, KeyError, TypeError) as e:
            raise ArrayFileError(f"{path}: unreadable header") from e
    start = -(-(len(MAGIC) + 8 + length) // ALIGN) * ALIGN
    whole = np.memmap(path, dtype=np.uint8, mode="r") if size > start else np.zeros(0, np.uint8)
    arrays: dict[str, np.ndarray] = {}
    try:
        for name, spec in layout.items():
            dtype, shape = np.dtype(spec["dtype"]), tuple(int(s) for s in spec["shape"])
            first = start + int(spec["offset"])
            end = first + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if end > size or first < start:
                raise ArrayFileError(f"{path}: array {name!r} lies past the end of the file")
            arrays[name] = np.asarray(whole[first:end]).view(dtype).reshape(shape)
    except (TypeError, ValueError, KeyError) as e:
        raise ArrayFileError(f"{path}: unreadable array layout") from e
    return meta, arrays
