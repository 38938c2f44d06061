"""Hancom HWP 5.0 (binary) documents: the OLE container read with olefile, the records parsed here.

An HWP 5.0 file is an OLE compound file: "FileHeader" (signature, version, flags: compressed,
password, distribution, DRM), "DocInfo" (styles and paragraph shapes, which say which paragraphs are
headings) and "BodyText/Section0..N" (the body: raw-deflate streams of records). A record is a 32-bit
header (tag: 10 bits, level: 10 bits, size: 12 bits, 0xFFF meaning a 32-bit size follows) and its
payload; records nest by level. A paragraph (PARA_HEADER) holds its text (PARA_TEXT, UTF-16LE with
control characters in it) and one CTRL_HEADER per extended control: tables ('tbl '), footnotes
('fn  '), endnotes ('en  '), headers and footers ('head', 'foot', left out of the body), ...

No parser on PyPI was both permissively licensed and well kept (pyhwp is AGPL), and the part needed
for text, tables and notes is small. A page starts at each section and at each paragraph whose break
type says "쪽 나누기". Bounded by `ReadLimits`: a stream inflates to `max_member_bytes` at most, a
stream holds `max_records` records at most, and no text record may be longer than the document's
`max_chars`, each checked before the records are built.
"""

from __future__ import annotations

import io
import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util.extras import require
from .containers import OLE_MAGIC
from .document import ReadError
from .limits import DEFAULT_LIMITS, ReadLimits
from .structure import Layout

SIGNATURE = b"HWP Document File"
COMPRESSED, PASSWORD, DISTRIBUTION, DRM = 0x1, 0x2, 0x4, 0x10
TAG_PARA_SHAPE, TAG_STYLE = 0x10 + 9, 0x10 + 10
TAG_PARA_HEADER, TAG_PARA_TEXT, TAG_CTRL_HEADER, TAG_LIST_HEADER, TAG_TABLE = (
    0x10 + 50,
    0x10 + 51,
    0x10 + 55,
    0x10 + 56,
    0x10 + 61,
)
PAGE_BREAK = 0x04
# PARA_TEXT control characters that take 8 UTF-16 units (the code, 12 bytes of data, the code again).
WIDE_CONTROLS = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23})
CHARACTERS = {9: " ", 10: "\n", 24: "-", 30: " ", 31: " "}
NOTES = {"fn  ": "각주", "en  ": "미주"}
_OUTLINE_STYLE = re.compile(r"^(?:개요|outline|heading|제목)\s*(\d{1,3})$", re.IGNORECASE)
_SECTION = re.compile(r"^BodyText/Section(\d+)$")


@dataclass
class Record:
    """One record and the records nested under it."""

    tag: int
    level: int
    data: bytes
    children: list[Record] = field(default_factory=list)


def read_hwp(
    raw: bytes, path: str | Path, limits: ReadLimits = DEFAULT_LIMITS
) -> tuple[str, str | None, dict[str, Any]]:
    """(text, title, metadata with the outline and "pages") of the HWP 5.0 file in `raw`."""
    if not raw:
        raise ReadError(path, "no text (empty file)")
    if not raw.startswith(OLE_MAGIC):
        kind = "an HWPX file (zip) named .hwp" if raw.startswith(b"PK\x03\x04") else "no OLE header"
        raise ReadError(path, f"not an HWP 5.0 file ({kind}; HWP 3.0 and DRM-wrapped files are not read)")
    olefile = require("olefile")
    try:
        ole = olefile.OleFileIO(io.BytesIO(raw))
    except Exception as e:  # OSError / struct.error / ... from a damaged container
        raise ReadError(path, f"corrupt HWP (OLE container: {type(e).__name__}: {e})") from None
    try:
        return _read(ole, path, limits)
    except ReadError:
        raise
    except Exception as e:  # zlib.error, struct.error, IndexError, ... from damaged streams
        raise ReadError(path, f"cannot read the HWP ({type(e).__name__}: {e})".replace("\n", " ")) from None
    finally:
        ole.close()


def _read(ole: Any, path: str | Path, limits: ReadLimits) -> tuple[str, str | None, dict[str, Any]]:
    if not ole.exists("FileHeader"):
        raise ReadError(path, "not an HWP 5.0 file (no FileHeader stream)")
    header = ole.openstream("FileHeader").read()
    if not header.startswith(SIGNATURE) or len(header) < 40:
        raise ReadError(path, "not an HWP 5.0 file (bad FileHeader signature)")
    flags = struct.unpack_from("<I", header, 36)[0]
    if flags & DRM:
        raise ReadError(path, "DRM-protected HWP; open it in Hancom Office and save it without DRM")
    if flags & PASSWORD:
        raise ReadError(path, "encrypted HWP (password); decrypt it first")
    if flags & DISTRIBUTION:
        raise ReadError(
            path, "HWP distribution document (encrypted, read-only); save it as a normal document"
        )
    compressed = bool(flags & COMPRESSED)
    streams = _Streams(ole, compressed, path, limits)
    levels = _heading_levels(streams.records("DocInfo")) if ole.exists("DocInfo") else {}
    sections = sorted(
        ("/".join(entry) for entry in ole.listdir() if _SECTION.match("/".join(entry))),
        key=lambda name: int(_SECTION.match(name).group(1)),  # type: ignore[union-attr]
    )
    if not sections:
        raise ReadError(path, "no BodyText sections")
    reader = _Reader(levels, Layout(path=path, limits=limits))
    for number, name in enumerate(sections):
        reader.section(_tree(streams.records(name)), first=number == 0)
    text, metadata = reader.layout.finish()
    metadata["pages"] = reader.page
    return text, reader.layout.title, metadata


@dataclass
class _Streams:
    """An HWP file's streams, inflated and cut into records within the read limits."""

    ole: Any
    compressed: bool
    path: str | Path
    limits: ReadLimits

    def data(self, name: str) -> bytes:
        data = self.ole.openstream(name).read()
        if not self.compressed:
            return bytes(data)
        inflate = zlib.decompressobj(-15)
        out = inflate.decompress(data, self.limits.max_member_bytes + 1)
        if len(out) > self.limits.max_member_bytes:
            raise self.limits.over(self.path, "max_member_bytes", f"bytes in the stream {name}")
        return out

    def records(self, name: str) -> Iterator[Record]:
        data = self.data(name)
        limits = self.limits
        offset = count = 0
        while offset + 4 <= len(data):
            (head,) = struct.unpack_from("<I", data, offset)
            offset += 4
            size = head >> 20
            if size == 0xFFF:
                (size,) = struct.unpack_from("<I", data, offset)
                offset += 4
            if offset + size > len(data):
                raise ValueError(f"record at {offset} runs past the stream's end")
            count += 1
            if count > limits.max_records:
                raise limits.over(self.path, "max_records", f"records in the stream {name}")
            tag = head & 0x3FF
            if tag == TAG_PARA_TEXT and size > 2 * limits.max_chars:
                raise limits.over(self.path, "max_chars", "characters in one paragraph")
            yield Record(tag, (head >> 10) & 0x3FF, data[offset : offset + size])
            offset += size


def _tree(records: Iterator[Record]) -> list[Record]:
    """The records as a forest: each under the nearest record before it one level up."""
    roots: list[Record] = []
    stack: list[Record] = []
    for record in records:
        while stack and stack[-1].level >= record.level:
            stack.pop()
        (stack[-1].children if stack else roots).append(record)
        stack.append(record)
    return roots


def _utf16(data: bytes, offset: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<H", data, offset)
    end = offset + 2 + 2 * length
    return data[offset + 2 : end].decode("utf-16-le"), end


def _heading_levels(records: Iterator[Record]) -> dict[tuple[str, int], int]:
    """("style" | "shape", id) -> heading level (from 1): "개요 N" styles, outline paragraph shapes."""
    levels: dict[tuple[str, int], int] = {}
    styles = shapes = 0
    for record in records:
        if record.tag == TAG_STYLE:
            name, _ = _utf16(record.data, 0)
            found = _OUTLINE_STYLE.match(name.strip())
            if found:
                levels["style", styles] = int(found.group(1))
            styles += 1
        elif record.tag == TAG_PARA_SHAPE and len(record.data) >= 4:
            (props,) = struct.unpack_from("<I", record.data, 0)
            if (props >> 23) & 0x3 == 1:  # 문단 머리 모양: 개요
                levels["shape", shapes] = ((props >> 25) & 0x7) + 1
            shapes += 1
    return levels


def _text(data: bytes) -> str:
    """A PARA_TEXT payload as text: controls dropped, tabs and line breaks kept as spaces and newlines."""
    units = struct.unpack(f"<{len(data) // 2}H", data[: len(data) // 2 * 2])
    out: list[str] = []
    i = 0
    while i < len(units):
        code = units[i]
        if code >= 32:
            start = i
            while i < len(units) and units[i] >= 32:
                i += 1
            out.append(data[2 * start : 2 * i].decode("utf-16-le", errors="replace"))
            continue
        out.append(CHARACTERS.get(code, ""))
        i += 8 if code in WIDE_CONTROLS else 1
    return "".join(out)


def _ctrl_id(record: Record) -> str:
    return record.data[:4][::-1].decode("latin-1")


class _Reader:
    def __init__(self, levels: dict[tuple[str, int], int], layout: Layout) -> None:
        self.layout = layout
        self.levels = levels
        self.page = 1
        self.fresh = True
        self.notes = {kind: 0 for kind in NOTES}
        self.layout.place(page=1)

    def section(self, paragraphs: list[Record], first: bool) -> None:
        if not first and not self.fresh:
            self._new_page()
        for record in paragraphs:
            if record.tag == TAG_PARA_HEADER:
                self.paragraph(record)

    def _new_page(self) -> None:
        self.page += 1
        self.layout.place(page=self.page)
        self.fresh = True

    def paragraph(self, record: Record) -> None:
        data = record.data
        shape, style = (struct.unpack_from("<H", data, 8)[0], data[10]) if len(data) >= 11 else (-1, -1)
        if len(data) >= 12 and data[11] & PAGE_BREAK and not self.fresh:
            self._new_page()
        text = "".join(_text(c.data) for c in record.children if c.tag == TAG_PARA_TEXT)
        notes: list[str] = []
        tables: list[list[list[str]]] = []
        for ctrl in (c for c in record.children if c.tag == TAG_CTRL_HEADER):
            kind = _ctrl_id(ctrl)
            if kind == "tbl ":
                tables.append(_table(ctrl))
            elif kind in NOTES:
                self.notes[kind] += 1
                body = " ".join(_plain(ctrl).split())
                if body:
                    notes.append(f"{NOTES[kind]} {self.notes[kind]}: {body}")
        self.fresh = self.fresh and not text.strip() and not tables
        level = self.levels.get(("style", style)) or self.levels.get(("shape", shape))
        if level:
            self.layout.heading_block(text, level)
        else:
            self.layout.paragraph(text)
        for note in notes:
            self.layout.paragraph(note)
        for rows in tables:
            self.layout.table(rows)


def _plain(ctrl: Record) -> str:
    """The text of the paragraphs under a control (a note, a cell), nested tables' cells included."""
    parts = []
    for child in ctrl.children:
        if child.tag == TAG_PARA_HEADER:
            parts.append("".join(_text(c.data) for c in child.children if c.tag == TAG_PARA_TEXT))
            for inner in (c for c in child.children if c.tag == TAG_CTRL_HEADER and _ctrl_id(c) == "tbl "):
                parts.extend(" ".join(row) for row in _table(inner))
    return "\n".join(p for p in parts if p.strip())


def _table(ctrl: Record) -> list[list[str]]:
    """A table's cells by row: each LIST_HEADER opens a cell (its row at byte 10), the paragraphs after
    it are the cell's."""
    cells: list[tuple[int, Record]] = []
    for child in ctrl.children:
        if child.tag == TAG_LIST_HEADER:
            row = struct.unpack_from("<H", child.data, 10)[0] if len(child.data) >= 12 else 0
            cells.append((row, Record(child.tag, child.level, child.data)))
        elif child.tag == TAG_PARA_HEADER and cells:
            cells[-1][1].children.append(child)
    rows: dict[int, list[str]] = {}
    for row, cell in cells:
        rows.setdefault(row, []).append(_plain(cell))
    return [rows[r] for r in sorted(rows)]
