"""Reading sentences to encode from txt, jsonl, csv and tsv files."""

from __future__ import annotations

import gzip

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
