"""Excel (.xlsx) workbooks with openpyxl (read-only, cached values, not formulas): each sheet a section
headed by its name, each row one line with its header cells ("이름: 김철수 | 부서: 총무과"); the
first non-empty row of a sheet is its header. The sheet's declared dimension is ignored (a hostile one
claims the whole grid) and rows are read as stored, within `ReadLimits`: rows (the empty ones a row
number skips included), columns with a value, and cells visited."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from .._util.extras import require
from .containers import open_zip
from .document import ReadError
from .limits import DEFAULT_LIMITS, ReadLimits
from .structure import Layout, clean

# Rows per table section: a long sheet becomes several tables, so a hit names where it is.
ROWS_PER_TABLE = 200


def read_xlsx(
    raw: bytes, path: str | Path, limits: ReadLimits = DEFAULT_LIMITS
) -> tuple[str, str | None, dict[str, Any]]:
    """(text, title, metadata with the outline and "sheets") of the XLSX in `raw`."""
    open_zip(raw, path, "XLSX", "xl/workbook.xml", limits)
    openpyxl = require("openpyxl")
    try:
        book = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
        layout = Layout(path=path, limits=limits)
        names = []
        visited = _Visited(path, limits)
        for sheet in book.worksheets:
            names.append(sheet.title)
            layout.place(sheet=sheet.title)
            layout.heading_block(sheet.title, 1)
            header: list[str] | None = None
            rows: list[list[str]] = []
            written = False
            sheet.reset_dimensions()  # read the rows stored, not the grid the file claims
            for values in sheet.iter_rows(values_only=True):
                cells = [_cell(v) for v in visited.row(values)]
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


class _Visited:
    """Counts the rows and cells a workbook's reading visits (openpyxl fills a row out to its last
    stored column, and yields an empty row for each row number skipped), refusing past the limits."""

    def __init__(self, path: str | Path, limits: ReadLimits) -> None:
        self.path, self.limits = path, limits
        self.rows = self.cells = 0

    def row(self, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """The row's values up to `max_columns`; a value past it refuses the file."""
        limits = self.limits
        self.rows += 1
        self.cells += len(values) + 1
        if self.rows > limits.max_rows:
            raise limits.over(self.path, "max_rows", "rows in a workbook")
        if self.cells > limits.max_cells:
            raise limits.over(self.path, "max_cells", "cells in a workbook")
        if len(values) > limits.max_columns:
            if any(v is not None for v in values[limits.max_columns :]):
                raise limits.over(self.path, "max_columns", "columns with a value in a row")
            values = values[: limits.max_columns]
        return values


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return clean(str(value)).replace("\n", " ")
