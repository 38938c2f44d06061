"""Every office reader bounded by what it produces, not by the file's size (tests/helpers/hostile_files.py
writes each file): a hostile file is refused with a ReadError naming the limit, or read right, and a
honest one beside it is unaffected."""

from __future__ import annotations

from pathlib import Path

import pytest

from munjang.ingest import ReadError, ReadLimits, find_files, read_bytes, read_file
from tests.helpers import hostile_files as hostile
from tests.helpers import office_files as office
from tests.helpers.files import write


def test_a_zip_version_the_library_cannot_read_is_that_files_error(tmp_path: Path) -> None:
    """zipfile raises NotImplementedError on such a directory: it was a 500 on upload and a traceback
    that stopped a folder add; now it is the file's ReadError and the folder's good files are read."""
    bad = hostile.zip_version(office.docx(office.SAMPLE))
    with pytest.raises(ReadError, match="unsupported DOCX zip"):
        read_bytes(bad, Path("bad.docx"), "docx")
    write(tmp_path / "a-bad.docx", bad)
    write(tmp_path / "b-good.docx", office.docx(office.SAMPLE))
    read, errors = [], []
    for file, root in find_files([tmp_path]):
        try:
            read.append(read_file(file, root).id)
        except ReadError as e:
            errors.append(e.path)
    assert read == ["b-good.docx"] and errors == [str(tmp_path / "a-bad.docx")]


def test_a_member_claiming_more_than_the_limit_is_refused_before_it_is_inflated() -> None:
    raw = hostile.claimed_size(office.docx(office.SAMPLE), "word/document.xml", 480 * 1024 * 1024)
    with pytest.raises(ReadError, match="max_member_bytes"):
        read_bytes(raw, Path("bomb.docx"), "docx")
    padded = hostile.rezip(
        office.hwpx(office.SAMPLE),
        lambda name, data: (
            data + b"<!--" + b"x" * 300_000 + b"-->" if name == "Contents/section0.xml" else data
        ),
    )
    assert "사업" in read_bytes(padded, Path("ok.hwpx"), "hwpx").text
    with pytest.raises(ReadError, match="max_member_bytes"):
        read_bytes(padded, Path("big.hwpx"), "hwpx", limits=ReadLimits(max_member_bytes=200_000))


def test_docx_styles_based_on_each_other_end_the_heading_lookup() -> None:
    """A on B, B on A, and C on itself: the lookup walked the loop forever."""
    doc = read_bytes(hostile.docx_style_loop(), Path("loop.docx"), "docx")
    assert (
        "고리 모양의 스타일 A" in doc.text
        and "고리 모양의 스타일 C" in doc.text
        and "평범한 문단" in doc.text
    )


def test_a_grid_span_past_the_column_limit_is_refused_before_the_row_is_laid_out() -> None:
    with pytest.raises(ReadError, match="max_columns"):
        read_bytes(hostile.docx_grid_span(), Path("span.docx"), "docx")
    doc = read_bytes(hostile.docx_grid_span(2), Path("span2.docx"), "docx")
    assert "머리" in doc.text


def test_many_footnotes_read_in_linear_time_and_are_bounded() -> None:
    """Each citation looked its note's number up by a list scan: 30k notes took minutes."""
    doc = read_bytes(hostile.docx_footnotes(30_000), Path("notes.docx"), "docx")
    assert "각주 30000: 각주 29999번의 내용." in doc.text
    with pytest.raises(ReadError, match="max_notes"):
        read_bytes(hostile.docx_footnotes(50), Path("notes.docx"), "docx", limits=ReadLimits(max_notes=20))


def test_an_xlsx_claiming_the_whole_grid_reads_its_rows_as_stored() -> None:
    doc = read_bytes(hostile.xlsx_whole_grid(), Path("grid.xlsx"), "xlsx")
    assert "이름: 김철수 | 부서: 총무과" in doc.text


def test_an_xlsx_row_numbered_in_the_billions_is_refused_by_the_row_limit() -> None:
    with pytest.raises(ReadError, match="max_rows"):
        read_bytes(hostile.xlsx_far_row(), Path("far.xlsx"), "xlsx")
    assert "멀리 떨어진 행" in read_bytes(hostile.xlsx_far_row(1_000), Path("near.xlsx"), "xlsx").text


def test_xlsx_rows_with_a_value_past_the_column_limit_are_refused() -> None:
    with pytest.raises(ReadError, match="max_columns"):
        read_bytes(hostile.xlsx_wide_rows(), Path("wide.xlsx"), "xlsx")


def test_a_deck_over_the_slide_limit_is_refused_before_its_slides_are_read() -> None:
    raw = hostile.pptx_slides(4)
    assert read_bytes(raw, Path("deck.pptx"), "pptx").metadata["slides"] == 4
    with pytest.raises(ReadError, match="max_slides"):
        read_bytes(raw, Path("deck.pptx"), "pptx", limits=ReadLimits(max_slides=3))


def test_hwp_streams_are_bounded_by_bytes_records_and_characters() -> None:
    raw = hostile.hwp_zero_records(300_000)  # 1.2 MB of empty records from a few kB
    with pytest.raises(ReadError, match="max_member_bytes"):
        read_bytes(raw, Path("zeros.hwp"), "hwp", limits=ReadLimits(max_member_bytes=1_000_000))
    with pytest.raises(ReadError, match="max_records"):
        read_bytes(raw, Path("zeros.hwp"), "hwp", limits=ReadLimits(max_records=100_000))
    many = hostile.hwp_paragraphs(1_000_000)  # took 22.6 s: refused by its records, before any is built
    with pytest.raises(ReadError, match="max_records"):
        read_bytes(many, Path("many.hwp"), "hwp")
    assert read_bytes(hostile.hwp_paragraphs(1_000), Path("some.hwp"), "hwp").text.count("가") == 1_000
    long = hostile.hwp_long_paragraph(5_000)
    assert read_bytes(long, Path("long.hwp"), "hwp").text.count("가") == 5_000
    with pytest.raises(ReadError, match="max_chars"):
        read_bytes(long, Path("long.hwp"), "hwp", limits=ReadLimits(max_chars=1_000))


@pytest.mark.parametrize("kind", ["hwp", "hwpx", "docx"])
def test_a_document_over_the_character_limit_is_refused(kind: str) -> None:
    raw = {"hwp": office.hwp, "hwpx": office.hwpx, "docx": office.docx}[kind](office.SAMPLE)
    assert read_bytes(raw, Path(f"sample.{kind}"), kind).text
    with pytest.raises(ReadError, match="max_chars"):
        read_bytes(raw, Path(f"sample.{kind}"), kind, limits=ReadLimits(max_chars=50))


def test_a_fifo_is_refused_not_read(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with pytest.raises(ReadError, match="not a regular file"):
        read_file(fifo)


def test_an_hwpx_outline_level_of_thousands_of_digits_is_no_level() -> None:
    """A 5,000-digit heading level leaked Python's `sys.set_int_max_str_digits` message as the
    file's error; such a level is no level: the file reads, its paragraph a paragraph. (A level of
    1 makes the same paragraph a heading: the shape is read.)"""
    body = "이 사업은 지역 도서관의 디지털 전환을 돕는다. 모든 자료는 내년까지 전산화된다."

    def headings(level: str) -> list[str]:
        doc = read_bytes(hostile.hwpx_outline_level(level), Path("levels.hwpx"), "hwpx")
        assert body in doc.text
        return [h for section in doc.metadata["sections"] for h in section["heading"]]

    assert body in headings("1")
    assert body not in headings("9" * 5_000)
