"""Generic table reader and the STS example converter."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from munjang.data import Example
from munjang.data.examples import sts_examples
from munjang.data.sts import STSData, read_sts
from munjang.data.table import read_table
from munjang.errors import DataFormatError

NLI_IDS = {"entailment": 0, "neutral": 1, "contradiction": 2}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_real_files(data_dir: Path) -> None:
    stsb = read_table(
        data_dir / "stsb" / "sts-dev.csv", [5, 6], label=4, delimiter="\t", quoting=csv.QUOTE_NONE
    )
    assert len(stsb) == 1500
    assert stsb[0] == Example(
        ("A man with a hard hat is dancing.", "A man wearing a hard hat is dancing."), 5.0
    )
    korsts = read_table(data_dir / "korsts" / "sts-train.tsv.gz", ["sentence1", "sentence2"], label="score")
    assert len(korsts) == 5749
    kornli = read_table(
        data_dir / "kornli" / "xnli.dev.ko.tsv",
        ["sentence1", "sentence2"],
        label="gold_label",
        label_type=NLI_IDS,
    )
    assert len(kornli) == 2490 and kornli[0].label == 1


def test_csv_quoting_tsv_no_quoting_and_no_label(tmp_path: Path) -> None:
    rows = read_table(write(tmp_path / "a.csv", 'text,score\n"one, two",1.5\n'), ["text"], label="score")
    assert rows == [Example(("one, two",), 1.5)]
    rows = read_table(write(tmp_path / "b.tsv", 'q\td\n"open\tquote"\n'), ["q", "d"])
    assert rows == [Example(('"open', 'quote"'), None)]


def test_jsonl_gzip_and_label_types(tmp_path: Path) -> None:
    records = [
        {"a": "x", "b": "y", "n": 2, "c": "neutral"},
        {"a": "z", "b": "w", "n": 0.0, "c": "entailment"},
    ]
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress("\n".join(json.dumps(r) for r in records).encode()))
    assert [e.label for e in read_table(path, ["a", "b"], label="n", label_type=int)] == [2, 0]
    assert [e.label for e in read_table(path, ["a", "b"], label="n")] == [2.0, 0.0]
    assert [e.label for e in read_table(path, ["b"], label="c", label_type=NLI_IDS)] == [1, 0]
    assert read_table(path, ["b", "a"])[0].texts == ("y", "x")


def test_headerless_indices(tmp_path: Path) -> None:
    path = write(tmp_path / "c.txt", "1\tq1\tp1\n0\tq2\tp2\n")
    rows = read_table(path, [1, 2], label=0, label_type=int)
    assert rows == [Example(("q1", "p1"), 1), Example(("q2", "p2"), 0)]
    with_header = read_table(path, [1], has_header=True)
    assert with_header == [Example(("q2",))]


@pytest.mark.parametrize(
    ("name", "body", "kwargs", "message"),
    [
        ("a.tsv", "t\ts\nx\tnan\n", {"label": "s"}, r"a\.tsv line 2: label 'nan' is not a finite number"),
        (
            "b.tsv",
            "t\ts\nx\t1.5\n",
            {"label": "s", "label_type": int},
            r"b\.tsv line 2: label '1.5' is not a whole",
        ),
        (
            "c.tsv",
            "t\ts\nx\tmaybe\n",
            {"label": "s", "label_type": NLI_IDS},
            r"c\.tsv line 2: unknown label 'maybe'",
        ),
        ("d.tsv", "t\ts\nx\n", {"label": "s"}, r"d\.tsv line 2: 1 fields, but the header has 2"),
        ("e.tsv", "t\ts\n\t1\n", {"label": "s"}, r"e\.tsv line 2: 't' is empty"),
        ("f.tsv", "t\ts\nx\t1\n", {"label": "score"}, r"f\.tsv line 1: no column 'score'"),
        ("g.jsonl", '{"t": "x"}\n{"t": 3}\n', {}, r"g\.jsonl line 2: 't' is int, not a string"),
        (
            "h.jsonl",
            '{"t": "x", "s": true}\n',
            {"label": "s"},
            r"h\.jsonl line 1: label True is not a number",
        ),
        ("i.jsonl", '["x"]\n', {}, r"i\.jsonl line 1: expected a JSON object"),
        ("j.tsv", "t\n", {}, r"j\.tsv: no rows in the file"),
    ],
)
def test_malformed(tmp_path: Path, name: str, body: str, kwargs: dict, message: str) -> None:
    with pytest.raises(DataFormatError, match=message):
        read_table(write(tmp_path / name, body), ["t"], **kwargs)


def test_option_errors(tmp_path: Path) -> None:
    path = write(tmp_path / "a.tsv", "t\nx\n")
    with pytest.raises(ValueError, match="columns is empty"):
        read_table(path, [])
    with pytest.raises(TypeError, match="sequence of column"):
        read_table(path, "t")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="label_type"):
        read_table(path, ["t"], label="t", label_type=str)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="need a header row"):
        read_table(path, ["t"], has_header=False)
    with pytest.raises(ValueError, match="0 or more"):
        read_table(path, [-1])
    with pytest.raises(ValueError, match="do not apply to JSON"):
        read_table(write(tmp_path / "b.jsonl", '{"t": "x"}\n'), ["t"], delimiter=",")
    with pytest.raises(ValueError, match="field names"):
        read_table(write(tmp_path / "c.jsonl", '{"t": "x"}\n'), [0])
    with pytest.raises(FileNotFoundError):
        read_table(tmp_path / "missing.tsv", ["t"])


def test_sts_examples(data_dir: Path) -> None:
    data = STSData(["a", "b"], ["c", "d"], [5.0, 2.5])
    assert sts_examples(data) == [Example(("a", "c"), 1.0), Example(("b", "d"), 0.5)]
    assert sts_examples(data, max_score=10.0)[1].label == 0.25
    with pytest.raises(ValueError, match="positive"):
        sts_examples(data, max_score=0)
    test = sts_examples(read_sts(data_dir / "korsts" / "sts-test.tsv"))
    assert len(test) == 1379 and all(0.0 <= e.label <= 1.0 for e in test)  # type: ignore[operator]
