"""Reading files (plain text, Markdown, HTML, PDF) into documents for a collection."""

from __future__ import annotations

from .document import ReadError, SourceDocument
from .readers import MAX_BYTES, SUFFIXES, document_id, file_format, find_files, read_file

__all__ = [
    "MAX_BYTES",
    "SUFFIXES",
    "ReadError",
    "SourceDocument",
    "document_id",
    "file_format",
    "find_files",
    "read_file",
]
