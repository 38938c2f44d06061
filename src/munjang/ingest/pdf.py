"""PDF text with pypdf: each page's text layer, pages joined by a blank line, where each page starts
recorded. Encrypted, corrupt and image-only PDFs fail with a ReadError that says which it is."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._util.extras import require
from .decode import normalise
from .document import ReadError

PAGE_SEPARATOR = "\n\n"
NO_TEXT_LAYER = "no text layer (scanned or image-only PDF); run OCR first"


@dataclass(frozen=True)
class PdfText:
    text: str
    title: str | None
    pages: int
    page_starts: list[int]


def read_pdf(raw: bytes, path: str | Path) -> PdfText:
    """The text of every page of the PDF in `raw` (pypdf raises many kinds of errors on damaged files;
    each becomes a ReadError naming the file)."""
    pypdf = require("pypdf")
    if b"%PDF-" not in raw[:1024]:
        raise ReadError(path, "not a PDF (no %PDF- header)")
    try:
        # PdfReader tries the empty user password itself: many PDFs are encrypted only against editing.
        reader = pypdf.PdfReader(io.BytesIO(raw))
        pages = [_page_text(page) for page in reader.pages]
        title = _title(reader)
    except pypdf.errors.DependencyError as e:
        raise ReadError(path, f"encrypted PDF that needs an extra package to decrypt: {e}") from None
    except pypdf.errors.FileNotDecryptedError:
        raise ReadError(path, "encrypted PDF that needs a password; decrypt it first") from None
    except Exception as e:  # corrupt files: PdfReadError, but also KeyError, ValueError, ... from pypdf
        raise ReadError(path, f"cannot read the PDF ({type(e).__name__}: {e})".replace("\n", " ")) from None
    if not pages:
        raise ReadError(path, "no pages")
    if not any(pages):
        raise ReadError(path, NO_TEXT_LAYER)
    starts, offset = [], 0
    for text in pages:
        starts.append(offset)
        offset += len(text) + len(PAGE_SEPARATOR)
    return PdfText(PAGE_SEPARATOR.join(pages), title, len(pages), starts)


def _page_text(page: Any) -> str:
    text = normalise(page.extract_text() or "")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def _title(reader: Any) -> str | None:
    metadata = reader.metadata
    title = metadata.title if metadata is not None else None
    return (title.strip() or None) if isinstance(title, str) else None
