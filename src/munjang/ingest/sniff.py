"""A file's format from its bytes, not its name: what the server trusts for an upload."""

from __future__ import annotations

import io
import zipfile

from .containers import OLE_MAGIC, ZIP_MAGIC

# Zip members that mark each zipped format (the first found wins).
ZIP_MARKS = (
    ("Contents/section0.xml", "hwpx"),
    ("word/document.xml", "docx"),
    ("ppt/presentation.xml", "pptx"),
    ("xl/workbook.xml", "xlsx"),
)


def sniff(raw: bytes) -> str | None:
    """ "pdf", "hwp", "hwpx", "docx", "pptx", "xlsx", "html" or "text" by content, or None (binary data
    of another kind, or a zip or OLE file of another kind)."""
    head = raw[:1024]
    if b"%PDF-" in head:
        return "pdf"
    if raw.startswith(OLE_MAGIC):
        return "hwp" if b"HWP Document File" in raw else None
    if raw.startswith(ZIP_MAGIC):
        try:
            names = set(zipfile.ZipFile(io.BytesIO(raw)).namelist())
        except Exception:  # BadZipFile, NotImplementedError (a zip version zipfile cannot read), ...
            return None
        return next((kind for member, kind in ZIP_MARKS if member in names), None)
    if b"\x00" in head:
        return None
    lowered = head.lstrip().lower()
    if lowered.startswith((b"<!doctype html", b"<html")):
        return "html"
    return "text"
