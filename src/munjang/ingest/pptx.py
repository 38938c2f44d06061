"""PowerPoint (.pptx) presentations with python-pptx: one section per slide, its title as the heading,
then its text frames top to bottom, its tables, and its speaker notes ("노트: ..."). A deck of more
slides than `ReadLimits.max_slides` is refused before any slide is read."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from .._util.extras import require
from .containers import open_zip
from .document import ReadError
from .limits import DEFAULT_LIMITS, ReadLimits
from .structure import Layout


def read_pptx(
    raw: bytes, path: str | Path, limits: ReadLimits = DEFAULT_LIMITS
) -> tuple[str, str | None, dict[str, Any]]:
    """(text, title, metadata with the outline and "slides") of the PPTX in `raw`."""
    open_zip(raw, path, "PPTX", "ppt/presentation.xml", limits)
    pptx = require("pptx")
    try:
        presentation = pptx.Presentation(io.BytesIO(raw))
        if len(presentation.slides) > limits.max_slides:
            raise limits.over(path, "max_slides", "slides")
        layout = Layout(path=path, limits=limits)
        count = 0
        for number, slide in enumerate(presentation.slides, start=1):
            count = number
            layout.place(slide=number)
            layout.heading = []
            _slide(layout, slide)
        text, metadata = layout.finish()
        core_title = (presentation.core_properties.title or "").strip() or None
    except ReadError:
        raise
    except Exception as e:  # damaged XML, missing parts
        raise ReadError(path, f"cannot read the PPTX ({type(e).__name__}: {e})".replace("\n", " ")) from None
    metadata["slides"] = count
    return text, core_title or layout.title, metadata


def _slide(layout: Layout, slide: Any) -> None:
    title_shape = slide.shapes.title
    if title_shape is not None and title_shape.has_text_frame and title_shape.text_frame.text.strip():
        layout.heading_block(title_shape.text_frame.text, 1)
    shapes = [s for s in _flat(slide.shapes) if s is not title_shape]
    shapes.sort(key=lambda s: (s.top or 0, s.left or 0))
    for shape in shapes:
        if getattr(shape, "has_table", False) and shape.has_table:
            rows = [[cell.text for cell in row.cells] for row in shape.table.rows]
            layout.table(rows)
        elif shape.has_text_frame:
            for paragraph in shape.text_frame.paragraphs:
                layout.paragraph("".join(run.text for run in paragraph.runs) or paragraph.text)
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        if notes is not None and notes.text.strip():
            layout.paragraph(f"노트: {notes.text}")


def _flat(shapes: Any) -> list[Any]:
    """Shapes with groups opened (a group's shapes in its place)."""
    out = []
    for shape in shapes:
        if getattr(shape, "shapes", None) is not None and shape.shape_type == 6:  # MSO_SHAPE_TYPE.GROUP
            out.extend(_flat(shape.shapes))
        else:
            out.append(shape)
    return out
