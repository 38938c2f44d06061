"""Word (.docx) documents with python-docx: body paragraphs and tables in reading order, headings by
their style ("Heading N", "제목 N", "Title", or an outline level), footnotes and endnotes placed
after the paragraph that cites them, page numbers from page breaks (explicit ones and the ones Word
last rendered). Headers and footers are left out of the body. Bounded by `ReadLimits`: style chains
that loop, notes, and table rows whose grid spans outgrow `max_columns` are refused before python-docx
expands them."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from .._util.extras import require
from .containers import open_zip
from .document import ReadError
from .limits import DEFAULT_LIMITS, ReadLimits
from .structure import Layout

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING_STYLE = re.compile(r"^(?:heading|제목|개요)\s*(\d)$", re.IGNORECASE)
NOTE_PARTS = {"footnote": "word/footnotes.xml", "endnote": "word/endnotes.xml"}
NOTE_NAMES = {"footnote": "각주", "endnote": "미주"}


def read_docx(
    raw: bytes, path: str | Path, limits: ReadLimits = DEFAULT_LIMITS
) -> tuple[str, str | None, dict[str, Any]]:
    """(text, title, metadata with the outline and "pages") of the DOCX in `raw`."""
    archive = open_zip(raw, path, "DOCX", "word/document.xml", limits)
    docx = require("docx")
    try:
        document = docx.Document(io.BytesIO(raw))
        notes = {kind: _notes(archive, name, path, limits) for kind, name in NOTE_PARTS.items()}
        layout = Layout(path=path, limits=limits)
        body = document.element.body
        _check_tables(body, path, limits)
        reader = _Reader(layout, notes, next(body.iter(f"{W}lastRenderedPageBreak"), None) is not None)
        layout.place(page=1)
        for block in document.iter_inner_content():
            if isinstance(block, docx.table.Table):
                reader.table(block)
            else:
                reader.paragraph(block)
        text, metadata = layout.finish()
        # python-docx invents "Word Document" for a file without core properties
        has_core = "docProps/core.xml" in archive.namelist()
        core_title = (document.core_properties.title or "").strip() or None if has_core else None
    except ReadError:
        raise
    except Exception as e:  # damaged XML, missing parts: lxml and python-docx raise many kinds
        raise ReadError(path, f"cannot read the DOCX ({type(e).__name__}: {e})".replace("\n", " ")) from None
    metadata["pages"] = reader.page
    return text, core_title or layout.title, metadata


class _Reader:
    def __init__(self, layout: Layout, notes: dict[str, dict[str, str]], rendered: bool) -> None:
        """`rendered`: the file has the page breaks Word last rendered, which count pages alone (they
        include the explicit breaks); else explicit page breaks and section breaks do."""
        self.layout = layout
        self.notes = notes
        # a note's number is its place in its part, looked up once per citation
        self.numbers = {
            kind: {note_id: i for i, note_id in enumerate(found, 1)} for kind, found in notes.items()
        }
        self.page = 1
        self.rendered = rendered
        self.break_tag = f"{W}lastRenderedPageBreak" if rendered else f"{W}br"

    def paragraph(self, paragraph: Any) -> None:
        level = _heading_level(paragraph, self.layout.limits.max_style_depth)
        pieces: list[str] = []
        cited: list[str] = []
        for element in paragraph._p.iter(f"{W}t", f"{W}tab", f"{W}br", f"{W}lastRenderedPageBreak", *_REFS):
            tag = element.tag
            if tag == f"{W}t":
                pieces.append(element.text or "")
            elif tag == f"{W}tab":
                pieces.append(" ")
            elif tag == f"{W}br" and element.get(f"{W}type") not in ("page", "column"):
                pieces.append("\n")
            elif tag in (f"{W}br", f"{W}lastRenderedPageBreak"):
                if tag != self.break_tag or (tag == f"{W}br" and element.get(f"{W}type") != "page"):
                    continue
                self._emit("".join(pieces), level)
                pieces = []
                self._notes(cited)
                cited = []
                self.page += 1
                self.layout.place(page=self.page)
            else:
                kind = "footnote" if tag == f"{W}footnoteReference" else "endnote"
                note_id = element.get(f"{W}id") or ""
                if note_id in self.notes[kind]:
                    number = self.numbers[kind][note_id]
                    cited.append(f"{NOTE_NAMES[kind]} {number}: {self.notes[kind][note_id]}")
        self._emit("".join(pieces), level)
        self._notes(cited)
        if not self.rendered and paragraph._p.find(f"{W}pPr/{W}sectPr") is not None:  # a section break
            self.page += 1
            self.layout.place(page=self.page)

    def _emit(self, text: str, level: int | None) -> None:
        if level is None:
            self.layout.paragraph(text)
        else:
            self.layout.heading_block(text, level)

    def _notes(self, cited: list[str]) -> None:
        for note in cited:
            self.layout.paragraph(note)

    def table(self, table: Any) -> None:
        rows = []
        for row in table.rows:
            seen: set[int] = set()
            cells = []
            for cell in row.cells:  # a merged cell comes once per grid column it spans
                if id(cell._tc) in seen:
                    continue
                seen.add(id(cell._tc))
                cells.append("\n".join(p.text for p in cell.paragraphs))
            rows.append(cells)
        self.layout.table(rows)


_REFS = (f"{W}footnoteReference", f"{W}endnoteReference")


def _heading_level(paragraph: Any, max_depth: int) -> int | None:
    """1 for "Heading 1" / "제목 1" / "Title" (and an outline level of 0), ...; None for body text.
    A chain of styles based on each other that loops (or runs past `max_depth`) ends the walk there."""
    style = paragraph.style
    seen: set[str] = set()
    while style is not None and len(seen) < max_depth:
        key = style.style_id or style.name or ""
        if key in seen:
            break
        seen.add(key)
        name = (style.name or "").strip()
        if name.lower() == "title":
            return 1
        found = _HEADING_STYLE.match(name)
        if found:
            return int(found.group(1))
        style = style.base_style
    level = paragraph._p.find(f"{W}pPr/{W}outlineLvl")
    if level is not None and (value := level.get(f"{W}val", "9")).isdigit() and int(value) < 9:
        return int(value) + 1
    return None


def _check_tables(body: Any, path: str | Path, limits: ReadLimits) -> None:
    """Refuse tables whose rows span more grid columns than `max_columns`, or more cells in all than
    `max_cells`, before python-docx lays each row out on its grid (one cell per spanned column)."""
    cells = 0
    for row in body.iter(f"{W}tr"):
        width = 0
        for span in row.iterfind(f"{W}tc/{W}tcPr/{W}gridSpan"):
            value = span.get(f"{W}val", "1")
            width += int(value) if value.isdigit() and len(value) < 10 else limits.max_columns + 1
        width += sum(1 for tc in row.iterfind(f"{W}tc") if tc.find(f"{W}tcPr/{W}gridSpan") is None)
        if width > limits.max_columns:
            raise limits.over(path, "max_columns", "columns in a table row")
        cells += width
        if cells > limits.max_cells:
            raise limits.over(path, "max_cells", "table cells")


def _notes(archive: Any, name: str, path: str | Path, limits: ReadLimits) -> dict[str, str]:
    """Note id -> text of a footnotes or endnotes part (the separator notes, ids -1 and 0, left out)."""
    if name not in archive.namelist():
        return {}
    root = require("lxml.etree").fromstring(archive.read(name))
    if len(root) > limits.max_notes:
        raise limits.over(path, "max_notes", "footnotes or endnotes")
    out: dict[str, str] = {}
    for note in root:
        note_id = note.get(f"{W}id")
        if note_id is None or note.get(f"{W}type") in ("separator", "continuationSeparator"):
            continue
        paragraphs = ["".join(t.text or "" for t in p.iter(f"{W}t")) for p in note.iter(f"{W}p")]
        text = " ".join(p.strip() for p in paragraphs if p.strip())
        if text:
            out[note_id] = text
    return out
