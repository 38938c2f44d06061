"""What the office readers share: a document read as a stream of blocks (headings, paragraphs, notes,
tables, page / slide / sheet starts) and laid out into one text with its outline
(`search/collection/sections.py`).

Layout: paragraphs of a section are joined by a line break; a heading opens a new section (its path is
the headings above it); a table is a section of its own, one row per line, each cell after its column
header ("구분: 서울 | 인구: 950만"); a new page, slide or sheet opens a new section. Sections are
separated by a blank line, which belongs to the section before it, so the outline tiles the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..search.collection.sections import FIELD, Section
from .decode import normalise
from .limits import DEFAULT_LIMITS, ReadLimits

_SPACE = re.compile(r"[^\S\n]+")
CELL_SEPARATOR = " | "


def clean(text: str) -> str:
    """One paragraph's text: normalised, runs of spaces made one, lines stripped, no blank lines."""
    lines = (_SPACE.sub(" ", line).strip() for line in normalise(text).split("\n"))
    return "\n".join(line for line in lines if line)


def table_lines(rows: Sequence[Sequence[str]]) -> list[str]:
    """A table as lines a retriever can match: the header row, then each row with every cell after its
    column header (empty cells left out). A one-row table is its cells joined."""
    cells = [[clean(c).replace("\n", " ") for c in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if not cells:
        return []
    header, body = cells[0], cells[1:]
    lines = [CELL_SEPARATOR.join(c for c in header if c)]
    for row in body:
        parts = []
        for i, cell in enumerate(row):
            if not cell:
                continue
            name = header[i] if i < len(header) else ""
            parts.append(f"{name}: {cell}" if name and name != cell else cell)
        if parts:
            lines.append(CELL_SEPARATOR.join(parts))
    return lines


@dataclass
class Layout:
    """Builds a document's text and outline from blocks, in reading order, within `limits` (the
    characters and blocks a document may become; `path` names the file in the error)."""

    path: str | Path = ""
    limits: ReadLimits = DEFAULT_LIMITS
    title: str | None = None
    parts: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    heading: list[str] = field(default_factory=list)
    places: dict[str, Any] = field(default_factory=dict)
    tables: int = 0
    _open: list[str] = field(default_factory=list)
    _kind: str = "text"
    _table: int | None = None
    _length: int = 0
    _blocks: int = 0
    _chars: int = 0

    def _count(self, blocks: int, chars: int) -> None:
        self._blocks += blocks
        self._chars += chars
        if self._blocks > self.limits.max_blocks:
            raise self.limits.over(self.path, "max_blocks", "paragraphs, rows and notes")
        if self._chars > self.limits.max_chars:
            raise self.limits.over(self.path, "max_chars", "characters of text")

    def heading_block(self, text: str, level: int) -> None:
        """A heading of `level` (1 = outermost): it opens a section whose path ends with it."""
        text = clean(text).replace("\n", " ")
        if not text:
            return
        self._count(1, len(text))
        self._close()
        level = max(level, 1)
        self.heading = [*self.heading[: level - 1], text]
        if self.title is None and level == 1:
            self.title = text
        self._open.append(text)

    def paragraph(self, text: str) -> None:
        """A paragraph of the current section (empty ones are left out)."""
        text = clean(text)
        if text:
            self._count(1, len(text))
            if self._kind != "text":
                self._close()
            self._open.append(text)

    def table(self, rows: Sequence[Sequence[str]]) -> None:
        """A table: a section of its own, numbered in the document."""
        self._count(len(rows), 0)
        lines = table_lines(rows)
        if not lines:
            return
        self._count(0, sum(map(len, lines)))
        self._close()
        self.tables += 1
        self._kind, self._table = "table", self.tables
        self._open.extend(lines)
        self._close()

    def place(self, **where: Any) -> None:
        """A new page, slide or sheet (e.g. `place(page=3)`): the next text starts a new section there."""
        self._close()
        self.places.update(where)

    def _close(self) -> None:
        if not self._open:
            self._kind, self._table = "text", None
            return
        body = "\n".join(self._open)
        if self.parts:  # the blank line before belongs to the previous section
            self.parts[-1] += "\n\n"
            self._length += 2
            last = self.sections[-1]
            self.sections[-1] = Section(last.start, self._length, *_rest(last))
        start = self._length
        self.parts.append(body)
        self._length += len(body)
        self.sections.append(
            Section(start, self._length, tuple(self.heading), self._kind, table=self._table, **self.places)
        )
        self._open = []
        self._kind, self._table = "text", None

    def finish(self) -> tuple[str, dict[str, Any]]:
        """The text and the metadata to store with it ("sections", and "pages" / "slides" / "sheets"
        counted when the reader marked them)."""
        self._close()
        text = "".join(self.parts)
        metadata: dict[str, Any] = {FIELD: [s.to_dict() for s in self.sections]}
        if self.tables:
            metadata["tables"] = self.tables
        return text, metadata


def _rest(section: Section) -> tuple[Any, ...]:
    return (section.heading, section.kind, section.page, section.slide, section.sheet, section.table)
