"""Hostile office files, written from the honest ones of office_files.py by changing the part that
matters: a zip version no reader supports, a member that claims more bytes than a reader may unpack,
DOCX styles based on each other in a loop, a row spanning 2**31-1 grid columns, tens of thousands of
footnotes, XLSX sheets that claim the whole grid or a row numbered in the billions, decks of many
slides, HWP streams of zero records or one huge text record. Each is a few kilobytes."""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Callable

from tests.helpers import office_files as office


def rezip(raw: bytes, change: Callable[[str, bytes], bytes]) -> bytes:
    """The zip in `raw` with each member's bytes passed through `change(name, data)`."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(raw)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            target.writestr(info.filename, change(info.filename, source.read(info)))
    return out.getvalue()


def zip_version(raw: bytes, version: int = 99) -> bytes:
    """The zip with every central directory entry's "version needed to extract" set to `version`."""
    data = bytearray(raw)
    for found in re.finditer(rb"PK\x01\x02", data):
        struct.pack_into("<H", data, found.start() + 6, version)
    return bytes(data)


def claimed_size(raw: bytes, member: str, size: int) -> bytes:
    """The zip with `member`'s uncompressed size in its central directory entry set to `size`."""
    data = bytearray(raw)
    name = member.encode()
    for found in re.finditer(rb"PK\x01\x02", data):
        start = found.start()
        length = struct.unpack_from("<H", data, start + 28)[0]
        if bytes(data[start + 46 : start + 46 + length]) == name:
            struct.pack_into("<I", data, start + 24, size)
    return bytes(data)


def docx_style_loop() -> bytes:
    """A DOCX whose paragraphs use styles based on each other: A on B, B on A, and C on itself."""
    raw = office.docx([("p", "고리 모양의 스타일 A"), ("p", "고리 모양의 스타일 C"), ("p", "평범한 문단")])
    loop = "".join(
        f'<w:style w:type="paragraph" w:styleId="{sid}"><w:name w:val="{sid} style"/>'
        f'<w:basedOn w:val="{base}"/></w:style>'
        for sid, base in (("A", "B"), ("B", "A"), ("C", "C"))
    )

    def change(name: str, data: bytes) -> bytes:
        if name == "word/styles.xml":
            return data.replace(b"</w:styles>", loop.encode() + b"</w:styles>")
        if name == "word/document.xml":
            text = data.decode()
            text = text.replace("<w:p><w:r><w:t xml:space=\"preserve\">고리 모양의 스타일 A",
                                '<w:p><w:pPr><w:pStyle w:val="A"/></w:pPr><w:r><w:t xml:space="preserve">'
                                "고리 모양의 스타일 A", 1)  # fmt: skip
            text = text.replace("<w:p><w:r><w:t xml:space=\"preserve\">고리 모양의 스타일 C",
                                '<w:p><w:pPr><w:pStyle w:val="C"/></w:pPr><w:r><w:t xml:space="preserve">'
                                "고리 모양의 스타일 C", 1)  # fmt: skip
            return text.encode()
        return data

    return rezip(raw, change)


def docx_grid_span(span: int = 2**31 - 1) -> bytes:
    """A DOCX with a table whose one cell spans `span` grid columns."""
    raw = office.docx([("table", [["머리", "칸"], ["값", "값"]])])
    cell = f'<w:tc><w:tcPr><w:gridSpan w:val="{span}"/></w:tcPr>'.encode()
    return rezip(
        raw, lambda name, data: data.replace(b"<w:tc>", cell, 1) if name == "word/document.xml" else data
    )


def docx_footnotes(count: int) -> bytes:
    """A DOCX of `count` paragraphs, each citing a footnote of its own."""
    return office.docx([("p", f"문단 {i}번.", f"각주 {i}번의 내용.") for i in range(count)])


def xlsx_sheet(sheet_xml: str) -> bytes:
    """An XLSX whose first sheet's XML is `sheet_xml` (inside <sheetData>), with `dimension` given."""
    raw = office.xlsx({"표": [["이름", "부서"], ["김철수", "총무과"]]})
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"

    def change(name: str, data: bytes) -> bytes:
        if name == "xl/worksheets/sheet1.xml":
            head = '<?xml version="1.0" encoding="UTF-8"?>'
            return f'{head}<worksheet xmlns="{main}">{sheet_xml}</worksheet>'.encode()
        return data

    return rezip(raw, change)


def _row(number: int, cells: dict[str, str]) -> str:
    inner = "".join(
        f'<c r="{col}{number}" t="inlineStr"><is><t>{text}</t></is></c>' for col, text in cells.items()
    )
    return f'<row r="{number}">{inner}</row>'


def xlsx_whole_grid() -> bytes:
    """Two rows of data under a dimension that claims every cell of Excel's grid."""
    rows = _row(1, {"A": "이름", "B": "부서"}) + _row(2, {"A": "김철수", "B": "총무과"})
    return xlsx_sheet(f'<dimension ref="A1:XFD1048576"/><sheetData>{rows}</sheetData>')


def xlsx_far_row(number: int = 99_999_999_999) -> bytes:
    """A header row, then one row numbered `number`."""
    rows = _row(1, {"A": "이름"}) + _row(number, {"A": "멀리 떨어진 행"})
    return xlsx_sheet(f"<sheetData>{rows}</sheetData>")


def xlsx_wide_rows(count: int = 2_000) -> bytes:
    """`count` rows, each with a cell in column A and one in XFD (the 16,384th)."""
    rows = "".join(_row(i, {"A": f"값 {i}", "XFD": "끝"}) for i in range(1, count + 1))
    return xlsx_sheet(f"<sheetData>{rows}</sheetData>")


def pptx_slides(count: int) -> bytes:
    """A deck of `count` slides: python-pptx's one-slide deck with its slide part copied `count` - 1
    times and listed in the presentation, its relationships and content types (python-pptx itself
    takes minutes to add 10,000 slides)."""
    slide_type = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide"
    content_type = "application/vnd.openxmlformats-officedocument.presentationml.slide+xml"
    copies = range(2, count + 1)
    raw = office.pptx([{"title": "1번 슬라이드", "lines": ["내용"]}])
    with zipfile.ZipFile(io.BytesIO(raw)) as source:
        parts = {info.filename: source.read(info) for info in source.infolist()}
    slide, rels = parts["ppt/slides/slide1.xml"], parts["ppt/slides/_rels/slide1.xml.rels"]
    ids = "".join(f'<p:sldId id="{300 + k}" r:id="rIdCopy{k}"/>' for k in copies)
    links = "".join(
        f'<Relationship Id="rIdCopy{k}" Type="{slide_type}" Target="slides/slide{k}.xml"/>' for k in copies
    )
    kinds = "".join(
        f'<Override PartName="/ppt/slides/slide{k}.xml" ContentType="{content_type}"/>' for k in copies
    )
    parts["ppt/presentation.xml"] = parts["ppt/presentation.xml"].replace(
        b"</p:sldIdLst>", ids.encode() + b"</p:sldIdLst>"
    )
    parts["ppt/_rels/presentation.xml.rels"] = parts["ppt/_rels/presentation.xml.rels"].replace(
        b"</Relationships>", links.encode() + b"</Relationships>"
    )
    parts["[Content_Types].xml"] = parts["[Content_Types].xml"].replace(
        b"</Types>", kinds.encode() + b"</Types>"
    )
    for k in copies:
        parts[f"ppt/slides/slide{k}.xml"] = slide
        parts[f"ppt/slides/_rels/slide{k}.xml.rels"] = rels
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for name, data in parts.items():
            target.writestr(name, data)
    return out.getvalue()


def hwp_body(body: bytes) -> bytes:
    """An HWP 5.0 file whose one section's (compressed) stream is the records in `body`."""
    header = b"HWP Document File".ljust(32, b"\0") + struct.pack("<II", 0x05000300, 0x1)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = compressor.compress(body) + compressor.flush()
    summary = b"\xfe\xff\x00\x00" + b"\x00" * 44
    streams = {"FileHeader": header.ljust(256, b"\0"), "DocInfo": b"", "BodyText/Section0": packed}
    return office.cfb({**streams, "\x05HwpSummaryInformation": summary})


def _record(tag: int, level: int, data: bytes) -> bytes:
    if len(data) >= 0xFFF:
        return struct.pack("<II", tag | (level << 10) | (0xFFF << 20), len(data)) + data
    return struct.pack("<I", tag | (level << 10) | (len(data) << 20)) + data


def hwp_zero_records(count: int) -> bytes:
    """`count` empty records (tag 0, size 0): 4 bytes each, unpacked."""
    return hwp_body(b"\0\0\0\0" * count)


def hwp_long_paragraph(chars: int) -> bytes:
    """One paragraph of `chars` characters in a single text record."""
    text = "가" * chars + "\r"
    header = struct.pack("<IIHBBHHHI", len(text), 0, 0, 0, 0, 1, 0, 1, 0)
    return hwp_body(_record(0x10 + 50, 0, header) + _record(0x10 + 51, 1, text.encode("utf-16-le")))


def hwpx_outline_level(level: str) -> bytes:
    """An HWPX whose body paragraphs' shape (paraPr 0) is an outline heading of `level` (a number
    of thousands of digits, in the hostile case)."""
    shape = (
        '<hh:paraProperties itemCnt="1"><hh:paraPr id="0">'
        f'<hh:heading type="OUTLINE" idRef="0" level="{level}"/></hh:paraPr></hh:paraProperties>'
    )

    def change(name: str, data: bytes) -> bytes:
        if name != "Contents/header.xml":
            return data
        return data.replace(b"<hh:refList>", b"<hh:refList>" + shape.encode())

    return rezip(office.hwpx(office.SAMPLE), change)


def hwp_paragraphs(count: int) -> bytes:
    """`count` paragraphs of one character each (a header and a text record apiece): about 100
    bytes of file per thousand paragraphs."""
    text = "가\r"
    header = struct.pack("<IIHBBHHHI", len(text), 0, 0, 0, 0, 1, 0, 1, 0)
    paragraph = _record(0x10 + 50, 0, header) + _record(0x10 + 51, 1, text.encode("utf-16-le"))
    return hwp_body(paragraph * count)
