"""Reading sentences to encode from txt, jsonl, csv and tsv files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from munjang import DataFormatError
from munjang.data import read_texts


def test_txt_keeps_empty_lines_and_crlf(tmp_path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes('첫째\r\n\r\n셋째 "따옴표"\n'.encode())
    assert read_texts(path) == ["첫째", "", '셋째 "따옴표"']


def test_jsonl_csv_tsv_and_gzip(tmp_path) -> None:
    (tmp_path / "a.jsonl").write_text('{"text": "하나"}\n\n{"text": "둘", "id": 2}\n', encoding="utf-8")
    assert read_texts(tmp_path / "a.jsonl") == ["하나", "둘"]
    (tmp_path / "a.csv").write_text('text,n\n"a, quoted",1\nplain,2\n', encoding="utf-8")
    assert read_texts(tmp_path / "a.csv") == ["a, quoted", "plain"]
    (tmp_path / "a.tsv").write_text('n\tbody\n1\t"stray quote\n', encoding="utf-8")
    assert read_texts(tmp_path / "a.tsv", field="body") == ['"stray quote']
    (tmp_path / "a.txt.gz").write_bytes(gzip.compress(b"x\ny\n"))
    assert read_texts(tmp_path / "a.txt.gz") == ["x", "y"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("b.jsonl", '{"text": "ok"}\n{oops\n', r"b\.jsonl line 2: not valid JSON"),
        ("b.jsonl", '{"text": "ok"}\n{"body": "x"}\n', r"b\.jsonl line 2: no 'text' field"),
        ("b.csv", "body\nx\n", r"b\.csv line 1: no column 'text'"),
        ("b.csv", "", r"b\.csv: empty file"),
        ("b.tsv", "id\ttext\n1\tok\n2\n", r"b\.tsv line 3: 1 fields"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path, name: str, content: str, message: str) -> None:
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError, match=message):
        read_texts(tmp_path / name)


def test_missing_file_and_bad_bytes(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_texts(tmp_path / "none.txt")
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(DataFormatError, match="not UTF-8"):
        read_texts(tmp_path / "bin.txt")
    with pytest.raises(ValueError, match="unknown text format"):
        read_texts(tmp_path / "bin.txt", format="xml")


def test_a_line_that_is_not_utf8_is_named_and_with_on_error_only_it_is_left_out(tmp_path: Path) -> None:
    """A lone surrogate (a JSON escape, or a byte that is not UTF-8) reached the tokenizer as a type
    error naming no line, and the add stored none of the file's records."""
    from munjang.data import read_records

    jsonl = tmp_path / "docs.jsonl"
    lines = [json.dumps({"id": str(i), "text": f"문장 {i}"}) for i in range(10)]
    lines[3] = '{"id": "3", "text": "\\ud800 외톨이"}'
    jsonl.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError, match=r"docs.jsonl line 4: not UTF-8"):
        read_records(jsonl)
    errors: list[DataFormatError] = []
    records = read_records(jsonl, on_error=errors.append)
    assert [r.id for r in records] == [str(i) for i in range(10) if i != 3]
    assert len(errors) == 1 and "line 4" in str(errors[0])
    txt = tmp_path / "lines.txt"
    txt.write_bytes("첫째\n둘째\n".encode() + b"\xff\xfe bad\n")
    with pytest.raises(DataFormatError, match=r"lines.txt line 3: not UTF-8"):
        read_records(txt)
    assert [r.text for r in read_records(txt, on_error=errors.append)] == ["첫째", "둘째"]
