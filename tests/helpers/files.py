"""Files to read: text written as given, PDFs with a text layer, blank or encrypted (ingest tests)."""

from __future__ import annotations

import io
from pathlib import Path

KOREAN = "서울은 대한민국의 수도이다. 한강이 도시를 가로질러 흐른다.\n주식 시장이 오늘 크게 하락했다.\n"


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8", newline="")
    else:
        path.write_bytes(data)
    return path


def text_pdf(pages: list[str], title: str | None = None) -> bytes:
    """A PDF with a real text layer, one string per page (fpdf2's core font: Latin text only)."""
    from fpdf import FPDF

    pdf = FPDF()
    if title:
        pdf.set_title(title)
    pdf.set_font("Helvetica", size=12)
    for page in pages:
        pdf.add_page()
        pdf.multi_cell(0, 10, page)
    return bytes(pdf.output())


def blank_pdf(pages: int = 2) -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=200, height=200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def encrypted_pdf(user_password: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf(["Locked text."]))))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
