"""NLI reader: KorNLI counts, SNLI/MNLI/Hugging Face layouts, unlabeled and malformed rows, converters."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from munjang.data import Example
from munjang.data.nli import (
    NLI_LABELS,
    NLIData,
    nli_pair_examples,
    nli_triplet_examples,
    read_nli,
)
from munjang.errors import DataFormatError

HEADER = "sentence1\tsentence2\tgold_label\n"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- real files ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "rows"), [("xnli.dev.ko.tsv", 2490), ("xnli.test.ko.tsv.gz", 5010)])
def test_kornli_row_and_label_counts(data_dir: Path, name: str, rows: int) -> None:
    data = read_nli(data_dir / "kornli" / name)
    assert len(data) == len(data.premises) == len(data.hypotheses) == rows
    assert data.label_counts() == dict.fromkeys(NLI_LABELS, rows // 3)
    assert data.skipped_unlabeled == 0
    assert data.source == str(data_dir / "kornli" / name)


def test_kornli_first_rows_keep_stray_quotes(data_dir: Path) -> None:
    data = read_nli(data_dir / "kornli" / "xnli.dev.ko.tsv")
    assert data.premises[0] == '그리고 그가 말했다, "엄마, 저 왔어요."'
    assert data.hypotheses[0] == "그는 학교 버스가 그를 내려주자마자 엄마에게 전화를 걸었다."
    assert data.labels[:2] == [NLI_LABELS.index("neutral"), NLI_LABELS.index("contradiction")]
    assert sum('"' in p or '"' in h for p, h in zip(data.premises, data.hypotheses, strict=True)) == 28


def test_kornli_converters(data_dir: Path) -> None:
    data = read_nli(data_dir / "kornli" / "xnli.dev.ko.tsv")
    pairs = nli_pair_examples(data)
    assert len(pairs) == 2490
    assert pairs[0] == Example((data.premises[0], data.hypotheses[0]), 1)
    triplets = nli_triplet_examples(data)
    # XNLI: every premise has one hypothesis per label.
    assert len(triplets) == 830 and triplets.premises_left_out == 0
    assert triplets[0] == Example(
        (
            '그리고 그가 말했다, "엄마, 저 왔어요."',
            "그는 엄마에게 집에 갔다고 말했다.",
            "그는 한마디도 하지 않았다.",
        )
    )
    test = nli_triplet_examples(read_nli(data_dir / "kornli" / "xnli.test.ko.tsv.gz"))
    assert len(test) == 1670 and test.premises_left_out == 0


# -- other layouts ---------------------------------------------------------------------------------


def test_snli_jsonl_unlabeled_rows(tmp_path: Path) -> None:
    records = [
        {"sentence1": "A man sleeps.", "sentence2": "A person rests.", "gold_label": "entailment"},
        {"sentence1": "A man sleeps.", "sentence2": "He is awake.", "gold_label": "-"},
        {"sentence1": "A man sleeps.", "sentence2": "He is running.", "gold_label": "contradiction"},
    ]
    path = write(tmp_path / "snli.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(DataFormatError, match=r"snli\.jsonl line 2: .*'-'.*skip_unlabeled=True"):
        read_nli(path)
    data = read_nli(path, skip_unlabeled=True)
    assert data.labels == [0, 2] and data.skipped_unlabeled == 1
    assert data.hypotheses == ["A person rests.", "He is running."]


def test_hugging_face_columns_and_integer_labels(tmp_path: Path) -> None:
    lines = [
        {"premise": "P", "hypothesis": "H0", "label": 0},
        {"premise": "P", "hypothesis": "H1", "label": 1},
        {"premise": "P", "hypothesis": "H2", "label": 2},
        {"premise": "P", "hypothesis": "H?", "label": -1},
    ]
    path = write(tmp_path / "hf.jsonl", "\n".join(json.dumps(r) for r in lines))
    data = read_nli(path, premise="premise", hypothesis="hypothesis", label="label", skip_unlabeled=True)
    assert data.labels == [0, 1, 2] and data.skipped_unlabeled == 1
    with pytest.raises(DataFormatError, match="line 4"):
        read_nli(path, premise="premise", hypothesis="hypothesis", label="label")


def test_mnli_style_wide_header_and_case(tmp_path: Path) -> None:
    text = (
        "gold_label\tpairID\tsentence1\tsentence2\n"
        'Neutral\t1\tHe said "hi.\tHe spoke.\n'
        "CONTRADICTION\t2\tIt rains.\tIt is dry.\n"
    )
    data = read_nli(write(tmp_path / "mnli.txt", text))
    assert data.premises == ['He said "hi.', "It rains."]
    assert data.labels == [1, 2]


def test_headerless_indices_and_gzip(tmp_path: Path) -> None:
    path = tmp_path / "pairs.tsv.gz"
    path.write_bytes(gzip.compress(b"contradiction\tA\tB\n\nentailment\tC\tD\n"))
    data = read_nli(path, premise=1, hypothesis=2, label=0)
    assert (data.premises, data.hypotheses, data.labels) == (["A", "C"], ["B", "D"], [2, 0])


# -- malformed rows --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("a\tb\tentailment\na\tb\tmaybe\n", 3, "unknown label 'maybe'"),
        ("a\tb\tentailment\na\tb\n", 3, "2 fields, but the header has 3"),
        ("a\t \tneutral\n", 2, "'sentence2' is empty"),
        ("a\tb\t3\n", 2, "unknown label '3'"),
        ("a\tb\t\n", 2, "unknown label ''"),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path: Path, body: str, line: int, message: str) -> None:
    path = write(tmp_path / "bad.tsv", HEADER + body)
    with pytest.raises(DataFormatError, match=rf"bad\.tsv line {line}: {message}"):
        read_nli(path)


def test_missing_column_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"line 1: no column 'label'"):
        read_nli(write(tmp_path / "a.tsv", HEADER + "a\tb\tneutral\n"), label="label")
    with pytest.raises(DataFormatError, match="no labelled sentence pairs"):
        read_nli(write(tmp_path / "b.tsv", HEADER))
    with pytest.raises(DataFormatError, match="no labelled sentence pairs"):
        read_nli(write(tmp_path / "c.tsv", HEADER + "a\tb\t-\n"), skip_unlabeled=True)
    with pytest.raises(FileNotFoundError):
        read_nli(tmp_path / "missing.tsv")
    with pytest.raises(ValueError, match="need a header row"):
        read_nli(write(tmp_path / "d.tsv", "a\tb\tneutral\n"), has_header=False)


def test_nli_data_checks() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        NLIData(["a"], [], [0])
    with pytest.raises(ValueError, match="class indices"):
        NLIData(["a"], ["b"], [3])


def test_triplets_group_by_premise_and_count_left_out() -> None:
    data = NLIData(
        premises=["P", "P", "P", "P", "Q", "Q", "R", "P"],
        hypotheses=["e1", "c1", "e2", "n", "e", "n", "c", "e1"],
        labels=[0, 2, 0, 1, 0, 1, 2, 0],
    )
    triplets = nli_triplet_examples(data)
    assert list(triplets) == [Example(("P", "e1", "c1")), Example(("P", "e2", "c1"))]
    assert triplets.premises_left_out == 2  # Q has no contradiction, R no entailment
