"""What one file may cost to read: every reader is bounded by what it produces (characters, blocks,
rows, columns, slides, notes) and what it unpacks, not by the file's size, since a few kilobytes of
hostile zip or XML can describe gigabytes. Each limit is checked while parsing, before the costly
step it guards, and a file over one is refused with a `ReadError` naming the limit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .document import ReadError

MB = 1024 * 1024


@dataclass(frozen=True)
class ReadLimits:
    """The most one file may produce or unpack. The defaults hold any real document we have seen (a
    1,000-page report is ~3M characters and ~40k blocks; Excel's own grid is 1,048,576 rows of 16,384
    columns, but a sheet read as text past 1,024 columns is no longer a table anyone searches) while
    keeping a hostile file to seconds and a few hundred MB: a server sets `max_chars` to its
    document limit."""

    max_chars: int = 20_000_000  # characters of text the document may become
    max_blocks: int = 2_000_000  # paragraphs, headings, table rows and notes together
    max_member_bytes: int = 128 * MB  # one zip member or HWP stream, unpacked
    max_records: int = 1_000_000  # records of one HWP stream
    max_rows: int = 1_048_576  # rows of a workbook's sheets, the empty ones a row number skips included
    max_columns: int = 1_024  # columns of a table row (a sheet's, or a DOCX row's grid spans)
    max_cells: int = 20_000_000  # table cells visited, empty ones included
    max_slides: int = 5_000  # slides of a presentation
    max_notes: int = 100_000  # footnotes and endnotes of a document
    max_style_depth: int = 64  # styles based on styles, before the chain counts as a loop

    def over(self, path: str | Path, name: str, what: str) -> ReadError:
        """The error for a file with more `what` (e.g. "columns in a row") than the limit `name`."""
        return ReadError(path, f"more than {getattr(self, name):,} {what} (the {name} read limit)")


DEFAULT_LIMITS = ReadLimits()
