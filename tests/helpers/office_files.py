"""Office files written from one block list, for the reader tests and bench/office_autorag.py: HWPX,
DOCX (zipped XML written here), PPTX (python-pptx), XLSX (openpyxl) and HWP 5.0 (a minimal OLE
compound-file writer and the HWP records, written here: no HWP writer installs from PyPI).

A block is ("h1" | "h2", text), ("p", text), ("p", text, footnote), ("list", [items]),
("table", [[header...], [cells]...]) or ("page",) (a page break / a new section). Every file also
gets a page header line (HEADER_LINE) that a reader must leave out of the body."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Sequence
from itertools import pairwise
from typing import Any
from xml.sax.saxutils import escape

Block = tuple[Any, ...]
HEADER_LINE = "대외비 머리말 문구"

SAMPLE: list[Block] = [
    ("h1", "1. 사업 개요"),
    ("p", "이 사업은 지역 도서관의 디지털 전환을 돕는다. 모든 자료는 내년까지 전산화된다."),
    ("h2", "1.1 추진 배경"),
    ("p", "주민의 도서관 이용 방식이 빠르게 바뀌고 있다.", "작년 주민 설문 조사에서 확인된 결과이다."),
    ("list", ["첫째, 종이 자료를 모두 스캔한다.", "둘째, 소장 목록을 새로 정비한다."]),
    ("h1", "2. 예산 계획"),
    ("table", [["구분", "2024년", "2025년"], ["인건비", "3억 원", "4억 원"], ["장비비", "1억 원", "2억 원"]]),
    ("p", "예산은 매년 의회 심의를 거쳐 확정된다."),
    ("page",),
    ("h1", "3. 기대 효과"),
    ("p", "누구나 집에서 소장 자료를 찾아볼 수 있다."),
]
# Every sentence of SAMPLE's body text (the footnote's too), each to be found in exactly one passage.
SAMPLE_SENTENCES = [
    "이 사업은 지역 도서관의 디지털 전환을 돕는다.",
    "모든 자료는 내년까지 전산화된다.",
    "주민의 도서관 이용 방식이 빠르게 바뀌고 있다.",
    "작년 주민 설문 조사에서 확인된 결과이다.",
    "첫째, 종이 자료를 모두 스캔한다.",
    "둘째, 소장 목록을 새로 정비한다.",
    "예산은 매년 의회 심의를 거쳐 확정된다.",
    "누구나 집에서 소장 자료를 찾아볼 수 있다.",
]
SAMPLE_ROWS = [
    "구분: 인건비 | 2024년: 3억 원 | 2025년: 4억 원",
    "구분: 장비비 | 2024년: 1억 원 | 2025년: 2억 원",
]


def _zip(files: dict[str, bytes | str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            method = zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED
            archive.writestr(name, data, compress_type=method)
    return out.getvalue()


def _paragraphs(blocks: Sequence[Block]) -> list[Block]:
    """The blocks with lists opened into one paragraph per item (kind "li")."""
    out: list[Block] = []
    for block in blocks:
        out.extend([("li", item) for item in block[1]] if block[0] == "list" else [block])
    return out


# -- HWPX ------------------------------------------------------------------------------------------
HP = 'xmlns:hp="http://www.hancom.co.kr/hwpml/2011/paragraph"'
HS = 'xmlns:hs="http://www.hancom.co.kr/hwpml/2011/section"'
HH = 'xmlns:hh="http://www.hancom.co.kr/hwpml/2011/head"'


def _hwpx_p(text: str, style: int = 0, inner: str = "", page_break: bool = False) -> str:
    brk = ' pageBreak="1"' if page_break else ""
    return (
        f'<hp:p paraPrIDRef="0" styleIDRef="{style}"{brk}><hp:run charPrIDRef="0">{inner}'
        f"<hp:t>{escape(text)}</hp:t></hp:run></hp:p>"
    )


def _hwpx_sublist(text: str) -> str:
    return f"<hp:subList>{_hwpx_p(text)}</hp:subList>"


def hwpx(blocks: Sequence[Block], pages_as_sections: bool = True) -> bytes:
    """An HWPX file: a "page" block starts a new section file (or, without `pages_as_sections`, a
    paragraph with a page break)."""
    sections: list[list[str]] = [[]]
    header = f"<hp:ctrl><hp:header><hp:subList>{_hwpx_p(HEADER_LINE)}</hp:subList></hp:header></hp:ctrl>"
    sections[0].append(_hwpx_p("", inner=header))
    page_break = False
    for block in _paragraphs(blocks):
        kind = block[0]
        if kind == "page":
            if pages_as_sections:
                sections.append([])
            else:
                page_break = True
            continue
        if kind in ("h1", "h2"):
            sections[-1].append(_hwpx_p(block[1], style=int(kind[1]), page_break=page_break))
        elif kind in ("p", "li"):
            note = ""
            if len(block) > 2:
                note = f'<hp:ctrl><hp:footNote number="1">{_hwpx_sublist(block[2])}</hp:footNote></hp:ctrl>'
            sections[-1].append(_hwpx_p(block[1], inner=note, page_break=page_break))
        elif kind == "table":
            rows = "".join(
                "<hp:tr>"
                + "".join(
                    f'<hp:tc><hp:cellAddr colAddr="{c}" rowAddr="{r}"/>{_hwpx_sublist(cell)}</hp:tc>'
                    for c, cell in enumerate(row)
                )
                + "</hp:tr>"
                for r, row in enumerate(block[1])
            )
            table = f'<hp:tbl rowCnt="{len(block[1])}" colCnt="{len(block[1][0])}">{rows}</hp:tbl>'
            sections[-1].append(
                f'<hp:p paraPrIDRef="0" styleIDRef="0"><hp:run charPrIDRef="0">{table}</hp:run></hp:p>'
            )
        page_break = False
    files: dict[str, bytes | str] = {"mimetype": "application/hwp+zip"}
    files["version.xml"] = '<?xml version="1.0" encoding="UTF-8"?><hv:HCFVersion xmlns:hv="x" major="5"/>'
    styles = "".join(
        f'<hh:style id="{i}" type="PARA" name="{name}" engName="{eng}" paraPrIDRef="0" charPrIDRef="0"/>'
        for i, (name, eng) in enumerate(
            [("바탕글", "Normal"), ("개요 1", "Outline 1"), ("개요 2", "Outline 2")]
        )
    )
    files["Contents/header.xml"] = (
        f'<?xml version="1.0" encoding="UTF-8"?><hh:head {HH} version="1.4" secCnt="{len(sections)}">'
        f'<hh:refList><hh:styles itemCnt="3">{styles}</hh:styles></hh:refList></hh:head>'
    )
    for n, paragraphs in enumerate(sections):
        files[f"Contents/section{n}.xml"] = (
            f'<?xml version="1.0" encoding="UTF-8"?><hs:sec {HS} {HP}>{"".join(paragraphs)}</hs:sec>'
        )
    files["META-INF/manifest.xml"] = '<?xml version="1.0" encoding="UTF-8"?><odf:manifest xmlns:odf="m"/>'
    return _zip(files)


# -- DOCX ------------------------------------------------------------------------------------------
WNS = (
    'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
)
_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG = "http://schemas.openxmlformats.org/package/2006"


def _w_p(text: str, style: str | None = None, extra: str = "") -> str:
    props = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f'<w:p>{props}<w:r><w:t xml:space="preserve">{escape(text)}</w:t></w:r>{extra}</w:p>'


def docx(blocks: Sequence[Block]) -> bytes:
    """A DOCX file (headings as "Heading N" styles, a list, a table, a footnote, a page header)."""
    body: list[str] = []
    notes: list[str] = []
    for block in _paragraphs(blocks):
        kind = block[0]
        if kind == "page":
            body.append('<w:p><w:r><w:br w:type="page"/></w:r></w:p>')
        elif kind in ("h1", "h2"):
            body.append(_w_p(block[1], f"Heading{kind[1]}"))
        elif kind in ("p", "li"):
            extra = ""
            if len(block) > 2:
                note_id = len(notes) + 1
                notes.append(f'<w:footnote w:id="{note_id}">{_w_p(block[2])}</w:footnote>')
                extra = f'<w:r><w:footnoteReference w:id="{note_id}"/></w:r>'
            body.append(_w_p(block[1], "ListBullet" if kind == "li" else None, extra))
        elif kind == "table":
            rows = "".join(
                "<w:tr>" + "".join(f"<w:tc>{_w_p(c)}</w:tc>" for c in row) + "</w:tr>" for row in block[1]
            )
            body.append(f"<w:tbl>{rows}</w:tbl>")
    sect = '<w:sectPr><w:headerReference w:type="default" r:id="rId3"/></w:sectPr>'
    styles = "".join(
        f'<w:style w:type="paragraph" w:styleId="{sid}"><w:name w:val="{name}"/></w:style>'
        for sid, name in [("Normal", "Normal"), ("Heading1", "heading 1"), ("Heading2", "heading 2"),
                          ("ListBullet", "List Bullet")]
    )  # fmt: skip
    ct = "application/vnd.openxmlformats-officedocument.wordprocessingml"
    xml = '<?xml version="1.0" encoding="UTF-8"?>'
    return _zip(
        {
            "[Content_Types].xml": f'{xml}<Types xmlns="{_PKG}/content-types">'
            '<Default Extension="rels" '
            'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/word/document.xml" ContentType="{ct}.document.main+xml"/>'
            f'<Override PartName="/word/styles.xml" ContentType="{ct}.styles+xml"/>'
            f'<Override PartName="/word/footnotes.xml" ContentType="{ct}.footnotes+xml"/>'
            f'<Override PartName="/word/header1.xml" ContentType="{ct}.header+xml"/></Types>',
            "_rels/.rels": f'{xml}<Relationships xmlns="{_PKG}/relationships">'
            f'<Relationship Id="rId1" Type="{_RELS}/officeDocument" Target="word/document.xml"/>'
            "</Relationships>",
            "word/_rels/document.xml.rels": f'<?xml version="1.0" encoding="UTF-8"?>'
            f'<Relationships xmlns="{_PKG}/relationships">'
            f'<Relationship Id="rId1" Type="{_RELS}/styles" Target="styles.xml"/>'
            f'<Relationship Id="rId2" Type="{_RELS}/footnotes" Target="footnotes.xml"/>'
            f'<Relationship Id="rId3" Type="{_RELS}/header" Target="header1.xml"/></Relationships>',
            "word/document.xml": f'<?xml version="1.0" encoding="UTF-8"?><w:document {WNS}><w:body>'
            f"{''.join(body)}{sect}</w:body></w:document>",
            "word/styles.xml": f'<?xml version="1.0" encoding="UTF-8"?><w:styles {WNS}>{styles}</w:styles>',
            "word/footnotes.xml": f"{xml}<w:footnotes {WNS}>"
            f'<w:footnote w:type="separator" w:id="-1"><w:p/></w:footnote>{"".join(notes)}'
            "</w:footnotes>",
            "word/header1.xml": f"{xml}<w:hdr {WNS}>{_w_p(HEADER_LINE)}</w:hdr>",
        }
    )


# -- PPTX and XLSX ---------------------------------------------------------------------------------
def pptx(slides: Sequence[dict[str, Any]]) -> bytes:
    """A PPTX file: each slide {"title", "lines", "table" (rows, optional), "notes" (optional)}."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for spec in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = spec["title"]
        body = slide.placeholders[1].text_frame
        body.text = spec["lines"][0]
        for line in spec["lines"][1:]:
            body.add_paragraph().text = line
        if spec.get("table"):
            rows = spec["table"]
            shape = slide.shapes.add_table(
                len(rows), len(rows[0]), Inches(1), Inches(5), Inches(6), Inches(1)
            )
            for r, row in enumerate(rows):
                for c, cell in enumerate(row):
                    shape.table.cell(r, c).text = cell
        if spec.get("notes"):
            slide.notes_slide.notes_text_frame.text = spec["notes"]
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def xlsx(sheets: dict[str, list[list[Any]]]) -> bytes:
    """An XLSX file: sheet name -> rows (the first the header)."""
    from openpyxl import Workbook

    book = Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


# -- HWP 5.0 ---------------------------------------------------------------------------------------
FREE, END, FATSECT = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD


def cfb(streams: dict[str, bytes]) -> bytes:
    """A minimal OLE compound file (version 3, 512-byte sectors) holding `streams` ("A" or "S/A": one
    level of storages); streams under 4096 bytes go to the mini stream, as the format requires."""
    big = {n: d for n, d in streams.items() if len(d) >= 4096}
    small = {n: d for n, d in streams.items() if len(d) < 4096}
    sectors: list[bytes] = []
    fat: list[int] = []

    def chain(data: bytes, size: int, table: list[int], store: list[bytes]) -> int:
        if not data:
            return END
        first = len(store)
        count = -(-len(data) // size)
        for i in range(count):
            store.append(data[i * size : (i + 1) * size].ljust(size, b"\0"))
            table.append(first + i + 1 if i < count - 1 else END)
        return first

    starts: dict[str, int] = {}
    mini: list[bytes] = []
    minifat: list[int] = []
    for name, data in small.items():
        starts[name] = chain(data, 64, minifat, mini)
    for name, data in big.items():
        starts[name] = chain(data, 512, fat, sectors)
    root_start = chain(b"".join(mini), 512, fat, sectors)
    minifat_raw = b"".join(struct.pack("<I", x) for x in minifat)
    minifat_raw += b"\xff" * (-len(minifat_raw) % 512)
    minifat_start = chain(minifat_raw, 512, fat, sectors) if minifat else END
    # directory: root, storages, streams; siblings as a right-leaning chain sorted the CFB way
    names = sorted(streams)
    storages = sorted({n.split("/")[0] for n in names if "/" in n})
    entries: list[dict[str, Any]] = [
        {"name": "Root Entry", "type": 5, "start": root_start, "size": len(b"".join(mini))}
    ]
    index: dict[str, int] = {}
    for storage in storages:
        index[storage] = len(entries)
        entries.append({"name": storage, "type": 1, "start": 0, "size": 0})
    for name in names:
        index[name] = len(entries)
        entries.append(
            {"name": name.split("/")[-1], "type": 2, "start": starts[name], "size": len(streams[name])}
        )

    def link(parent: int, children: list[str]) -> None:
        order = sorted(children, key=lambda n: (len(n.split("/")[-1]), n.split("/")[-1].upper()))
        if not order:
            return
        entries[parent]["child"] = index[order[0]]
        for a, b in pairwise(order):
            entries[index[a]]["right"] = index[b]

    link(0, [n for n in names if "/" not in n] + storages)
    for storage in storages:
        link(index[storage], [n for n in names if n.startswith(storage + "/")])
    directory = b""
    for e in entries:
        raw_name = e["name"].encode("utf-16-le") + b"\0\0"
        directory += (
            raw_name.ljust(64, b"\0")
            + struct.pack("<HBB", len(raw_name), e["type"], 1)
            + struct.pack("<III", e.get("left", FREE), e.get("right", FREE), e.get("child", FREE))
            + b"\0" * 16
            + b"\0" * 4
            + b"\0" * 16
            + struct.pack("<IQ", e["start"], e["size"])
        )
    directory += b"\0" * (-len(directory) % 512)
    dir_start = chain(directory, 512, fat, sectors)
    fat_count = 1
    while (len(sectors) + fat_count) > fat_count * 128:
        fat_count += 1
    fat_first = len(sectors)
    fat += [FATSECT] * fat_count
    fat += [FREE] * (fat_count * 128 - len(fat))
    fat_raw = b"".join(struct.pack("<I", x) for x in fat)
    difat = [fat_first + i for i in range(fat_count)] + [FREE] * (109 - fat_count)
    header = (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 16
        + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6) + b"\0" * 6
        + struct.pack("<IIIIIIIII", 0, fat_count, dir_start, 0, 4096, minifat_start,
                      len(minifat_raw) // 512 if minifat else 0, END, 0)
        + b"".join(struct.pack("<I", x) for x in difat)
    )  # fmt: skip
    return header + b"".join(sectors) + fat_raw


def _record(tag: int, level: int, data: bytes) -> bytes:
    if len(data) >= 0xFFF:
        return struct.pack("<II", tag | (level << 10) | (0xFFF << 20), len(data)) + data
    return struct.pack("<I", tag | (level << 10) | (len(data) << 20)) + data


def _control(code: int, ctrl: str) -> str:
    """An extended control inside PARA_TEXT: 8 units, the code, the control id, 4 zero units, the code."""
    value = int.from_bytes(ctrl.encode("latin-1")[::-1], "little")
    return "".join(map(chr, [code, value & 0xFFFF, value >> 16, 0, 0, 0, 0, code]))


def _hwp_paragraph(text: str, level: int, style: int = 0, brk: int = 0, controls: Sequence[bytes] = (),
                   prefix: str = "") -> bytes:  # fmt: skip
    body = prefix + text + "\r"
    header = struct.pack("<IIHBBHHHI", len(body), 0, 0, style, brk, 1, 0, 1, 0)
    out = _record(0x10 + 50, level, header) + _record(0x10 + 51, level + 1, body.encode("utf-16-le"))
    return out + b"".join(controls)


def _hwp_list(paragraphs: Sequence[str], level: int, col: int = 0, row: int = 0) -> bytes:
    head = struct.pack("<HHIHHHH", len(paragraphs), 0, 0, col, row, 1, 1).ljust(34, b"\0")
    return _record(0x10 + 56, level, head) + b"".join(_hwp_paragraph(p, level) for p in paragraphs)


def hwp(blocks: Sequence[Block], flags: int = 0x1) -> bytes:
    """An HWP 5.0 file (compressed unless `flags` says otherwise; pass 0x3 for a "password" file):
    "개요 1" / "개요 2" styles for the headings, a table, a footnote, a page header, page breaks."""
    docinfo = b""
    for name in ("바탕글", "개요 1", "개요 2"):
        raw = name.encode("utf-16-le")
        docinfo += _record(
            0x10 + 10, 0, struct.pack("<H", len(name)) + raw + struct.pack("<HBBhHH", 0, 0, 0, 0, 0, 0)
        )
    body = b""
    header_ctrl = _record(0x10 + 55, 1, b"head"[::-1] + b"\0" * 4)
    header_ctrl += _hwp_list([HEADER_LINE], 2)
    body += _hwp_paragraph("", 0, controls=[header_ctrl], prefix=_control(16, "head"))
    brk = 0
    for block in _paragraphs(blocks):
        kind = block[0]
        if kind == "page":
            brk = 0x04
            continue
        if kind in ("h1", "h2"):
            body += _hwp_paragraph(block[1], 0, style=int(kind[1]), brk=brk)
        elif kind in ("p", "li"):
            if len(block) > 2:
                note = _record(0x10 + 55, 1, b"fn  "[::-1] + b"\0" * 4) + _hwp_list([block[2]], 2)
                body += _hwp_paragraph(block[1] + _control(17, "fn  "), 0, brk=brk, controls=[note])
            else:
                body += _hwp_paragraph(block[1], 0, brk=brk)
        elif kind == "table":
            rows = block[1]
            ctrl = _record(0x10 + 55, 1, b"tbl "[::-1] + b"\0" * 4)
            ctrl += _record(0x10 + 61, 2, struct.pack("<IHH", 0, len(rows), len(rows[0])))
            for r, row in enumerate(rows):
                for c, cell in enumerate(row):
                    ctrl += _hwp_list([cell], 2, c, r)
            body += _hwp_paragraph("", 0, brk=brk, controls=[ctrl], prefix=_control(11, "tbl "))
        brk = 0
    header = b"HWP Document File".ljust(32, b"\0") + struct.pack("<II", 0x05000300, flags)
    header = header.ljust(256, b"\0")

    def pack(data: bytes) -> bytes:
        if not flags & 0x1:
            return data
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        return compressor.compress(data) + compressor.flush()

    summary = b"\xfe\xff\x00\x00" + b"\x00" * 44  # an empty property set: readers look for the stream
    streams = {"FileHeader": header, "DocInfo": pack(docinfo), "BodyText/Section0": pack(body)}
    return cfb({**streams, "\x05HwpSummaryInformation": summary})
