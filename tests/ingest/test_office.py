"""munjang.ingest's office readers (HWP, HWPX, DOCX, PPTX, XLSX) on files written by
tests/helpers/office_files.py: every sentence once, table rows whole with their headers, headings as
the section path, pages / slides / sheets right, page headers left out, broken files reported; and the
passages the planner cuts from the outline."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from munjang.ingest import ReadError, read_file
from munjang.ingest.sniff import sniff
from munjang.search.collection.passages import ChunkingConfig, PassagePlanner
from munjang.search.collection.sections import describe, location, outline_of
from tests.helpers import office_files as office
from tests.helpers.files import write

WRITERS = {"hwp": office.hwp, "hwpx": office.hwpx, "docx": office.docx}


@pytest.fixture(params=sorted(WRITERS))
def sample(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    kind = request.param
    return read_file(write(tmp_path / f"plan.{kind}", WRITERS[kind](office.SAMPLE)), tmp_path)


def test_text_headings_tables_notes_pages(sample: Any) -> None:
    text, meta = sample.text, sample.metadata
    for sentence in office.SAMPLE_SENTENCES:
        assert text.count(sentence) == 1, sentence
    assert all(row in text.split("\n") for row in office.SAMPLE_ROWS)
    assert office.HEADER_LINE not in text
    assert sample.title == "1. 사업 개요" and meta["pages"] == 2 and meta["tables"] == 1
    sections = outline_of(meta, len(text))
    assert sections is not None
    at = {s.path: s for s in sections if s.kind == "text"}
    assert set(at) == {"1. 사업 개요", "1. 사업 개요 > 1.1 추진 배경", "2. 예산 계획", "3. 기대 효과"}
    table = next(s for s in sections if s.kind == "table")
    assert table.table == 1 and table.path == "2. 예산 계획" and table.page == 1
    assert text[table.start : table.end].strip().split("\n")[1:] == office.SAMPLE_ROWS
    effect = text.index("누구나 집에서")
    assert describe(location(meta, effect)) == "p. 2" and location(meta, effect)["heading"] == "3. 기대 효과"
    assert describe(location(meta, text.index("구분: 장비비"))) == "p. 1, 표 1"
    assert "각주 1: 작년 주민 설문 조사에서 확인된 결과이다." in text


def test_hwpx_page_breaks_inside_one_section(tmp_path: Path) -> None:
    doc = read_file(write(tmp_path / "a.hwpx", office.hwpx(office.SAMPLE, pages_as_sections=False)))
    assert doc.metadata["pages"] == 2
    assert location(doc.metadata, doc.text.index("누구나"))["page"] == 2


def test_pptx_slides_and_notes(tmp_path: Path) -> None:
    slides = [
        {
            "title": "도서관 사업",
            "lines": ["디지털 전환을 시작한다.", "모든 자료를 스캔한다."],
            "notes": "발표는 5분 안에 끝낸다.",
        },
        {
            "title": "예산",
            "lines": ["예산은 두 해에 나뉜다."],
            "table": [["구분", "금액"], ["인건비", "3억 원"]],
        },
    ]
    doc = read_file(write(tmp_path / "deck.pptx", office.pptx(slides)))
    assert doc.metadata["slides"] == 2 and doc.title == "도서관 사업"
    assert "노트: 발표는 5분 안에 끝낸다." in doc.text
    assert "구분: 인건비 | 금액: 3억 원" in doc.text.split("\n")
    assert describe(location(doc.metadata, doc.text.index("모든 자료"))) == "slide 1"
    assert describe(location(doc.metadata, doc.text.index("구분: 인건비"))) == "slide 2, 표 1"
    assert location(doc.metadata, doc.text.index("예산은"))["heading"] == "예산"


def test_xlsx_rows_with_headers(tmp_path: Path) -> None:
    sheets = {
        "직원": [["이름", "부서", "입사"], ["김철수", "총무과", 2019], ["이영희", "기획과", 2021.0]],
        "빈 시트": [],
    }
    doc = read_file(write(tmp_path / "staff.xlsx", office.xlsx(sheets)))
    lines = doc.text.split("\n")
    assert (
        "이름: 김철수 | 부서: 총무과 | 입사: 2019" in lines
        and "이름: 이영희 | 부서: 기획과 | 입사: 2021" in lines
    )
    assert doc.metadata["sheets"] == ["직원", "빈 시트"]
    assert describe(location(doc.metadata, doc.text.index("이영희"))) == "직원, 표 1"


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("locked.hwp", office.hwp(office.SAMPLE, flags=0x3), "encrypted HWP"),
        ("drm.hwp", office.hwp(office.SAMPLE, flags=0x11), "DRM-protected HWP"),
        ("zero.hwp", b"", "empty file"),
        ("zero.docx", b"", "empty file"),
        ("text.hwp", b"plain text, not HWP", "not an HWP 5.0 file"),
        ("broken.hwpx", office.hwpx(office.SAMPLE)[:300], "corrupt HWPX"),
        ("drm.docx", b"\x00DRM-WRAPPED" + b"\x01" * 100, "DRM-protected or corrupt"),
        ("locked.xlsx", office.cfb({"EncryptedPackage": b"x" * 100}), "encrypted or DRM-protected XLSX"),
        ("wrong.pptx", office.docx(office.SAMPLE), "no ppt/presentation.xml"),
        ("bad-ole.hwp", office.cfb({"FileHeader": b"x" * 10})[:700], "HWP"),
    ],
)
def test_broken_files_are_read_errors(tmp_path: Path, name: str, data: bytes, message: str) -> None:
    path = write(tmp_path / name, data)
    with pytest.raises(ReadError, match=message) as caught:
        read_file(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("name", "required"),
    [
        ("bomb.docx", "word/document.xml"),
        ("bomb.hwpx", "Contents/section0.xml"),
        ("bomb.pptx", "ppt/presentation.xml"),
        ("bomb.xlsx", "xl/workbook.xml"),
    ],
)
def test_a_zip_bomb_is_refused_before_it_is_unpacked(tmp_path: Path, name: str, required: str) -> None:
    """~70 MB of zeros deflate to ~70 KB (1000x): over what the upload's size allows, so the file is
    refused from the zip's directory, whichever library would have read it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(required, b"<x/>")
        archive.writestr("padding.bin", bytes(70 * 1024 * 1024))
    path = write(tmp_path / name, buffer.getvalue())
    with pytest.raises(ReadError, match="over the limit") as caught:
        read_file(path)
    assert "zip bomb" in str(caught.value)


def test_a_highly_compressible_document_is_read(tmp_path: Path) -> None:
    """One sentence repeated 20,000 times deflates more than MAX_RATIO times: under the floor of
    what any zip may unpack to, so it reads; the ratio bound only applies above it."""
    from munjang.ingest.containers import MAX_RATIO, UNPACKED_FLOOR

    blocks = [("h1", "반복")] + [("p", "같은 문장이 계속 반복된다.")] * 20_000
    raw = office.docx(blocks)
    unpacked = sum(i.file_size for i in zipfile.ZipFile(io.BytesIO(raw)).infolist())
    assert unpacked > MAX_RATIO * len(raw) and unpacked < UNPACKED_FLOOR
    path = write(tmp_path / "long.docx", raw)
    assert read_file(path).text.count("같은 문장이 계속 반복된다.") == 20_000


def test_sniff_by_content() -> None:
    assert sniff(office.hwp(office.SAMPLE)) == "hwp"
    assert sniff(office.hwpx(office.SAMPLE)) == "hwpx"
    assert sniff(office.docx(office.SAMPLE)) == "docx"
    assert sniff(office.xlsx({"a": [["x"]]})) == "xlsx"
    assert sniff(b"%PDF-1.7 ...") == "pdf" and sniff("서울".encode()) == "text"
    assert sniff(office.cfb({"EncryptedPackage": b"x"})) is None and sniff(bytes(range(256))) is None


# -- passages from the outline ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def e5(e5_path: Path) -> Any:
    from transformers import AutoTokenizer

    return SimpleNamespace(tokenizer=AutoTokenizer.from_pretrained(e5_path), max_seq_length=512)


def test_passages_follow_the_outline(sample: Any, e5: Any) -> None:
    config = ChunkingConfig.from_mapping({"max_tokens": 48, "overlap_tokens": 0})
    outline = outline_of(sample.metadata, len(sample.text))
    passages = PassagePlanner(e5, config).plan([sample.text], [sample.title], [outline])[0]
    for sentence in office.SAMPLE_SENTENCES:
        assert sum(sentence in p.text for p in passages) == 1, sentence
    for row in office.SAMPLE_ROWS:  # rows whole, each in one passage
        assert sum(row in p.text for p in passages) == 1
    assert all(sample.text[p.start : p.end] == p.text for p in passages)
    assert outline is not None
    for p in passages:  # no passage spans two sections; each carries its section path
        section = next(s for s in outline if s.start <= p.start < s.end)
        assert p.end <= section.end and p.encoded.startswith(f"{sample.title}\n{section.path}".rstrip())
