"""Excel (.xlsx) workbooks with openpyxl (read-only, cached values, not formulas): each sheet a section
headed by its name, each row one line with its header cells ("이름: 김철수 | 부서: 총무과"); the
first non-empty row of a sheet is its header."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from .._util.extras import require
from .containers import open_zip
from .document import ReadError
from .structure import Layout, clean

# Rows per table section: a long sheet becomes several tables, so a hit names where it is.
ROWS_PER_TABLE = 200


def read_xlsx(raw: bytes, path: str | Path) -> tuple[str, str | None, dict[str, Any]]:
    """(text, title, metadata with the outline and "sheets") of the XLSX in `raw`."""
    open_zip(raw, path, "XLSX", "xl/workbook.xml")
    openpyxl = require("openpyxl")
    try:
        book = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
        layout = Layout()
        names = []
        for sheet in book.worksheets:
            names.append(sheet.title)
            layout.place(sheet=sheet.title)
            layout.heading_block(sheet.title, 1)
            header: list[str] | None = None
            rows: list[list[str]] = []
            written = False
            for values in sheet.iter_rows(values_only=True):
                cells = [_cell(v) for v in values]
                if not any(cells):
                    continue
                if header is None:
                    header = cells
                    continue
                rows.append(cells)
                if len(rows) == ROWS_PER_TABLE:
                    layout.table([header, *rows])
                    rows, written = [], True
            if header is not None and (rows or not written):
                layout.table([header, *rows])
        title = (book.properties.title or "").strip() or None if book.properties else None
        book.close()
        text, metadata = layout.finish()
    except ReadError:
        raise
    except Exception as e:  # damaged XML, missing parts
        raise ReadError(path, f"cannot read the XLSX ({type(e).__name__}: {e})".replace("\n", " ")) from None
    metadata["sheets"] = names
    return text, title or (names[0] if names else None), metadata


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return clean(str(value)).replace("\n", " ")
