"""Damaged index files of a folder collection, made from whole ones: flipped bytes, a file cut
short, rows permuted or set to NaN inside a checksummed file's arrays, a same-named file of another
collection swapped in, a FIFO in a file's place; and a small deterministic encoder (a hashed bag of
character trigrams) so a collection can be built and searched, in a subprocess too, without loading
a model."""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

DIM = 32


class TrigramEncoder:
    """Unit vectors of hashed character trigrams: close texts get close vectors, in microseconds."""

    prompts: ClassVar[dict[str, str]] = {}

    def get_embedding_dimension(self) -> int:
        return DIM

    def encode(self, texts: list[str], **_: Any) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            padded = f"  {text} "
            for i in range(len(padded) - 2):
                out[row, zlib.crc32(padded[i : i + 3].encode()) % DIM] += 1.0
            out[row, zlib.crc32(text.encode()) % DIM] += 0.5  # no text maps to all zeros
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def array_layout(path: Path) -> tuple[int, dict[str, Any]]:
    """(where the arrays start, their layout) of an array file (`index/array_file.py`)."""
    raw = path.read_bytes()
    length = int.from_bytes(raw[10:18], "little")
    header = json.loads(raw[26 : 26 + length])
    return -(-(26 + length) // 64) * 64, header["arrays"]


def _rows(path: Path, name: str) -> tuple[bytearray, int, int, int]:
    """(the file's bytes, the array's offset, its row count, its row size in bytes)."""
    start, layout = array_layout(path)
    spec = layout[name]
    rows, width = spec["shape"][0], int(np.prod(spec["shape"][1:], dtype=np.int64))
    return (
        bytearray(path.read_bytes()),
        start + spec["offset"],
        rows,
        width * np.dtype(spec["dtype"]).itemsize,
    )


def flip(path: Path, count: int = 64, seed: int = 0) -> None:
    """Flip one bit in each of `count` bytes spread over the file (its header spared)."""
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(seed)
    first = min(len(data) - 1, 128)
    for at in rng.integers(first, len(data) - 24, size=count):
        data[at] ^= 1 << int(rng.integers(0, 8))
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    """Cut off the file's last third."""
    data = path.read_bytes()
    path.write_bytes(data[: 2 * len(data) // 3])


def permute_rows(path: Path, name: str = "vectors", seed: int = 0) -> None:
    """Shuffle the rows of one array of an array file in place (its checksum left as it was)."""
    data, offset, rows, size = _rows(path, name)
    block = np.frombuffer(bytes(data[offset : offset + rows * size]), np.uint8).reshape(rows, size)
    order = np.random.default_rng(seed).permutation(rows)
    if rows > 1 and (order == np.arange(rows)).all():
        order = np.roll(order, 1)
    data[offset : offset + rows * size] = block[order].tobytes()
    path.write_bytes(bytes(data))


def nan_rows(path: Path, name: str = "vectors", every: int = 3) -> None:
    """Set every `every`-th row of a float array to NaN."""
    data, offset, rows, size = _rows(path, name)
    nan = np.full(size // 4, np.nan, dtype=np.float32).tobytes()
    for row in range(0, rows, every):
        data[offset + row * size : offset + (row + 1) * size] = nan
    path.write_bytes(bytes(data))


def fifo(path: Path) -> None:
    """A FIFO (nobody writes to it) in the file's place: opening it for reading would block."""
    path.unlink()
    os.mkfifo(path)


def swapped_from(other: Path) -> Callable[[Path], None]:
    """A damage that puts `other` (the same file of another collection) in the file's place."""

    def swap(path: Path) -> None:
        path.write_bytes(other.read_bytes())

    return swap


def delete(path: Path) -> None:
    """The file removed (a segment deleted from the middle of a graph's set)."""
    path.unlink()


def extra_segment(path: Path) -> None:
    """A copy of the graph segment `path` beside it under the next free segment number, as a stray
    file a careless copy leaves: the set on disk holds one segment more than its manifest."""
    stem, _, _ = path.name.rpartition(".seg-")
    number = 1
    while path.with_name(f"{stem}.seg-{number}").exists():
        number += 1
    path.with_name(f"{stem}.seg-{number}").write_bytes(path.read_bytes())


def reorder_segment(path: Path) -> None:
    """Graph segment `path` and the next one swapped (each file whole, checksums and owner right)."""
    stem, _, number = path.name.rpartition(".seg-")
    other = path.with_name(f"{stem}.seg-{int(number) + 1}")
    first, second = path.read_bytes(), other.read_bytes()
    path.write_bytes(second)
    other.write_bytes(first)


DAMAGES: dict[str, Callable[[Path], None]] = {
    "delete": delete,
    "extra": extra_segment,
    "reorder": reorder_segment,
    "flip": flip,
    "truncate": truncate,
    "permute": permute_rows,
    "nan": nan_rows,
    "fifo": fifo,
}


def zero(path: Path, name: str = "alive") -> None:
    """Set one array of an array file to zeros (a BM25 live bitmap: every text dead)."""
    data, offset, rows, size = _rows(path, name)
    data[offset : offset + rows * size] = bytes(rows * size)
    path.write_bytes(bytes(data))


def first_format(path: Path) -> None:
    """Rewrite an index file as munjang wrote it before checksums: an array file in the first
    layout (magic `MJARRAYS1`, no digests), an HNSW file with a footer of no digest and no meta."""
    raw = path.read_bytes()
    if raw.startswith(b"MJARRAYS2\n"):
        start, layout = array_layout(path)
        header = json.loads(raw[26 : 26 + int.from_bytes(raw[10:18], "little")])
        for spec in layout.values():
            del spec["xxh3"]
        text = json.dumps({"meta": header["meta"], "arrays": layout}).encode()
        begin = -(-(18 + len(text)) // 64) * 64
        head = b"MJARRAYS1\n" + len(text).to_bytes(8, "little") + text
        path.write_bytes(head + bytes(begin - len(head)) + raw[start:])
        return
    length = int.from_bytes(raw[-16:-8], "little")
    footer = json.loads(raw[-16 - length : -16])
    old = {k: footer[k] for k in ("format", "version", "config", "count", "payload_bytes")}
    text = json.dumps(old).encode()
    path.write_bytes(raw[: footer["payload_bytes"]] + text + len(text).to_bytes(8, "little") + raw[-8:])


QUERIES = ["guitar on stage", "고양이 소파", "stock market", "서울 비", "a cat sleeps", "시장 경제 뉴스"]
MODES = ("dense", "lexical", "hybrid")


def _hits(hits: Any) -> list[tuple[str, float]]:
    return [(h.id, round(float(h.score), 4)) for h in hits]


def answers(folder: Path) -> dict[str, Any]:
    """What a new reader of `folder` answers (each mode's top 5 per query, scores rounded), what
    `check()` finds, and the warning lines logged while it opened and searched."""
    import logging

    from munjang.search.collection.collection import Collection

    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    keep = Keep(logging.WARNING)
    logging.getLogger("munjang").addHandler(keep)
    try:
        with Collection.open(folder, encoder=TrigramEncoder(), readonly=True) as col:
            found = {
                mode: [
                    [(h.id, round(float(h.score), 4)) for h in col.search(q, k=5, mode=mode)] for q in QUERIES
                ]
                for mode in MODES
            }
            problems = col.check()
    finally:
        logging.getLogger("munjang").removeHandler(keep)
    return {"answers": found, "problems": problems, "warnings": lines}


if __name__ == "__main__":
    import sys

    print(json.dumps(answers(Path(sys.argv[1]))))
