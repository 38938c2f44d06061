"""Reading files (plain text, Markdown, HTML, PDF, HWP, HWPX, DOCX, PPTX, XLSX) into documents for a
collection; `sniff` tells a format by content."""

from __future__ import annotations

from .document import ReadError, SourceDocument
from .limits import DEFAULT_LIMITS, ReadLimits
from .readers import MAX_BYTES, SUFFIXES, document_id, file_format, find_files, read_bytes, read_file
from .sniff import sniff

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_BYTES",
    "SUFFIXES",
    "ReadError",
    "ReadLimits",
    "SourceDocument",
    "document_id",
    "file_format",
    "find_files",
    "read_bytes",
    "read_file",
    "sniff",
]
