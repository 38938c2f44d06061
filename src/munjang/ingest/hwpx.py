"""Hancom HWPX (OWPML: zipped XML) documents: the sections in order, paragraphs with their headings
(outline levels and "개요 N" styles from Contents/header.xml), tables (one row per line, cells after
their column headers), footnotes and endnotes after the paragraph that cites them; headers, footers
and hidden comments left out. A page starts at each section and at each paragraph with a page break.

Read with the standard library's zip and lxml (no HWPX reader on PyPI was both well kept and
permissively licensed when this was written); elements are matched by local name, so the 2011 and
later namespace versions read alike."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .._util.extras import require
from .containers import member, open_zip
from .document import ReadError
from .limits import DEFAULT_LIMITS, ReadLimits
from .structure import Layout

_SECTION = re.compile(r"^Contents/section(\d+)\.xml$")
_OUTLINE_STYLE = re.compile(r"^(?:개요|outline|heading|제목)\s*(\d{1,3})$", re.IGNORECASE)
NOTES = {"footNote": "각주", "endNote": "미주"}


def read_hwpx(
    raw: bytes, path: str | Path, limits: ReadLimits = DEFAULT_LIMITS
) -> tuple[str, str | None, dict[str, Any]]:
    """(text, title, metadata with the outline and "pages") of the HWPX in `raw`."""
    archive = open_zip(raw, path, "HWPX", "Contents/section0.xml", limits)
    etree = require("lxml.etree")

    names = sorted(
        (n for n in archive.namelist() if _SECTION.match(n)),
        key=lambda n: int(_SECTION.match(n).group(1)),  # type: ignore[union-attr]
    )
    manifest = "META-INF/manifest.xml"
    if manifest in archive.namelist() and b"encryption-data" in member(archive, manifest, path, "HWPX"):
        raise ReadError(path, "encrypted HWPX (password or DRM); decrypt it first")
    try:
        head = (
            member(archive, "Contents/header.xml", path, "HWPX")
            if "Contents/header.xml" in archive.namelist()
            else b""
        )
        levels = _heading_levels(etree.fromstring(head)) if head else ({}, {})
        reader = _Reader(levels, Layout(path=path, limits=limits))
        for number, name in enumerate(names):
            root = etree.fromstring(member(archive, name, path, "HWPX"))
            reader.section(root, first=number == 0)
        text, metadata = reader.layout.finish()
    except ReadError:
        raise
    except Exception as e:  # XMLSyntaxError and the like from damaged parts
        raise ReadError(path, f"cannot read the HWPX ({type(e).__name__}: {e})".replace("\n", " ")) from None
    metadata["pages"] = reader.page
    return text, reader.layout.title, metadata


def _local(element: Any) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _small(number: str) -> bool:
    return number.isdigit() and len(number) <= 3


def _heading_levels(header: Any) -> tuple[dict[str, int], dict[str, int]]:
    """(paraPr id -> outline level, style id -> level) from Contents/header.xml, levels from 1."""
    by_shape: dict[str, int] = {}
    by_style: dict[str, int] = {}
    for element in header.iter():
        name = _local(element)
        if name == "paraPr":
            for child in element.iter():
                level = child.get("level", "0")  # a level of thousands of digits is no level
                if _local(child) == "heading" and child.get("type") == "OUTLINE" and _small(level):
                    by_shape[element.get("id", "")] = int(level) + 1
        elif name == "style":
            found = _OUTLINE_STYLE.match((element.get("name") or "").strip())
            if found:
                by_style[element.get("id", "")] = int(found.group(1))
    return by_shape, by_style


class _Reader:
    def __init__(self, levels: tuple[dict[str, int], dict[str, int]], layout: Layout) -> None:
        self.layout = layout
        self.by_shape, self.by_style = levels
        self.page = 1
        self.notes = {"footNote": 0, "endNote": 0}
        self.fresh = True  # nothing on the current page yet: a page break there starts no new page
        self.layout.place(page=1)

    def section(self, root: Any, first: bool) -> None:
        if not first and not self.fresh:
            self.page += 1
            self.layout.place(page=self.page)
            self.fresh = True
        for paragraph in root:
            if _local(paragraph) == "p":
                self.paragraph(paragraph)

    def paragraph(self, p: Any) -> None:
        if p.get("pageBreak") == "1" and not self.fresh:
            self.page += 1
            self.layout.place(page=self.page)
            self.fresh = True
        pieces: list[str] = []
        tables: list[Any] = []
        notes: list[str] = []
        for run in p:
            if _local(run) != "run":
                continue
            for child in run:
                name = _local(child)
                if name == "t":
                    pieces.append(_text(child))
                elif name == "tbl":
                    tables.append(child)
                elif name == "ctrl":
                    notes += self._notes(child)
        text = "".join(pieces)
        self.fresh = self.fresh and not text.strip() and not tables
        level = self.by_style.get(p.get("styleIDRef", "")) or self.by_shape.get(p.get("paraPrIDRef", ""))
        if level:
            self.layout.heading_block(text, level)
        else:
            self.layout.paragraph(text)
        for note in notes:
            self.layout.paragraph(note)
        for table in tables:
            self.layout.table(_rows(table))

    def _notes(self, ctrl: Any) -> list[str]:
        out = []
        for child in ctrl:
            kind = _local(child)
            if kind in NOTES:
                self.notes[kind] += 1
                body = " ".join(_plain(p) for p in child.iter() if _local(p) == "p").strip()
                if body:
                    out.append(f"{NOTES[kind]} {self.notes[kind]}: {' '.join(body.split())}")
        return out


def _text(t: Any) -> str:
    """An hp:t's text: its own, tabs as spaces, line breaks kept, the text after each inline element."""
    parts = [t.text or ""]
    for child in t:
        name = _local(child)
        parts.append("\n" if name == "lineBreak" else " " if name in ("tab", "nbSpace", "fwSpace") else "")
        parts.append(child.tail or "")
    return "".join(parts)


def _plain(p: Any) -> str:
    """A paragraph's text without its notes, tables or controls (cells, notes)."""
    return "".join(_text(child) for run in p if _local(run) == "run" for child in run if _local(child) == "t")


def _rows(table: Any) -> list[list[str]]:
    rows = []
    for tr in table:
        if _local(tr) != "tr":
            continue
        cells = []
        for tc in tr:
            if _local(tc) == "tc":
                paragraphs = [_plain(p) for p in tc.iter() if _local(p) == "p"]
                cells.append("\n".join(x for x in paragraphs if x.strip()))
        rows.append(cells)
    return rows
