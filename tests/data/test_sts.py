"""STS readers: exact row counts on the real files, stray quotes kept, every format, every malformed case."""

from __future__ import annotations

import csv
import gzip
import json
import os
from pathlib import Path

import pytest

from munjang.data import STSData, read_sts
from munjang.errors import DataFormatError
from tests.helpers.paths import REPO

KORSTS_HEADER = "genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2"


def data_dir() -> Path:
    """The data folder: $MUNJANG_DATA, else $MUNJANG_SHARED/data, else ../shared/data beside the repo."""
    if "MUNJANG_DATA" in os.environ:
        path = Path(os.environ["MUNJANG_DATA"])
    elif "MUNJANG_SHARED" in os.environ:
        path = Path(os.environ["MUNJANG_SHARED"]) / "data"
    else:
        path = REPO.parent / "shared" / "data"
    if not path.is_dir():
        pytest.fail(
            f"STS data folder {path} is missing: set MUNJANG_DATA to the folder holding korsts/ and stsb/"
        )
    return path


def data_file(*parts: str) -> Path:
    path = data_dir().joinpath(*parts)
    if not path.is_file():
        pytest.fail(f"data file {path} is missing")
    return path


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def korsts_row(score: str, s1: str, s2: str) -> str:
    return f"main-captions\tMSRvid\t2012test\t0001\t{score}\t{s1}\t{s2}"


# -- real files ------------------------------------------------------------------------------------

ROW_COUNTS = {"train": 5749, "dev": 1500, "test": 1379}


@pytest.mark.parametrize("split", ROW_COUNTS)
@pytest.mark.parametrize("fmt", ["auto", "korsts"])
def test_korsts_row_counts(split: str, fmt: str) -> None:
    name = "sts-train.tsv.gz" if split == "train" else f"sts-{split}.tsv"
    data = read_sts(data_file("korsts", name), fmt)
    assert len(data) == ROW_COUNTS[split]
    assert len(data.sentences1) == len(data.sentences2) == len(data.scores) == ROW_COUNTS[split]
    assert min(data.scores) == 0.0 and max(data.scores) == 5.0


@pytest.mark.parametrize("split", ROW_COUNTS)
@pytest.mark.parametrize("fmt", ["auto", "stsb"])
def test_stsb_row_counts(split: str, fmt: str) -> None:
    data = read_sts(data_file("stsb", f"sts-{split}.csv"), fmt)
    assert len(data) == ROW_COUNTS[split]
    assert min(data.scores) == 0.0 and max(data.scores) == 5.0


def test_real_first_rows_and_source() -> None:
    path = data_file("stsb", "sts-dev.csv")
    data = read_sts(path)
    assert data.sentences1[0] == "A man with a hard hat is dancing."
    assert data.sentences2[0] == "A man wearing a hard hat is dancing."
    assert data.scores[:2] == [5.0, 4.75]
    assert data.source == str(path)
    korsts = read_sts(data_file("korsts", "sts-dev.tsv"))
    # KorSTS is a translation of STS-B: same pairs in the same order, same scores.
    assert korsts.scores == data.scores


def test_stray_quotes_are_kept_intact() -> None:
    # sts-dev.tsv line 656: sentence2 opens with an unbalanced-looking quote, which default CSV quoting
    # would treat as the start of a quoted field running into the next rows.
    path = data_file("korsts", "sts-dev.tsv")
    lines = path.read_text(encoding="utf-8").split("\n")
    line_no = next(i for i, line in enumerate(lines, start=1) if '\t"' in line)
    fields = lines[line_no - 1].split("\t")
    data = read_sts(path)
    row = line_no - 2  # minus the header, 0-based
    assert data.sentences1[row] == fields[5]
    assert data.sentences2[row] == fields[6]
    assert data.sentences2[row].startswith('"')
    assert data.scores[row] == float(fields[4])
    # The same row read with ordinary quoting would merge rows: the guard that this test means something.
    with path.open(encoding="utf-8", newline="") as f:
        assert len(list(csv.reader(f, delimiter="\t"))) - 1 < ROW_COUNTS["dev"]


def test_stsb_extra_trailing_columns_are_ignored() -> None:
    path = data_file("stsb", "sts-test.csv")
    lines = path.read_text(encoding="utf-8").split("\n")
    index = next(i for i, line in enumerate(lines) if len(line.split("\t")) > 7)
    fields = lines[index].split("\t")
    data = read_sts(path)
    assert (data.sentences1[index], data.sentences2[index], data.scores[index]) == (
        fields[5],
        fields[6],
        float(fields[4]),
    )


# -- each format on small files --------------------------------------------------------------------


def test_korsts_small(tmp_path: Path) -> None:
    text = "\n".join([KORSTS_HEADER, korsts_row("5.000", "하나", "둘"), korsts_row("0.5", '"따옴표', "셋")])
    for fmt in ("auto", "korsts"):
        data = read_sts(write(tmp_path / "k.tsv", text + "\n"), fmt)
        assert data.sentences1 == ["하나", '"따옴표']
        assert data.sentences2 == ["둘", "셋"]
        assert data.scores == [5.0, 0.5]


def test_stsb_small(tmp_path: Path) -> None:
    text = (
        'main-news\theadlines\t2015\t0001\t3.2\tA "quoted\ttext\n'  # unbalanced quote inside sentence1
        "main-news\theadlines\t2015\t0002\t1\tone\ttwo\tEurope Media Monitor (emm)\thttp://example\n"
    )
    for fmt in ("auto", "stsb"):
        data = read_sts(write(tmp_path / "sts-x.csv", text), fmt)
        assert data.sentences1 == ['A "quoted', "one"]
        assert data.sentences2 == ["text", "two"]
        assert data.scores == [3.2, 1.0]


KLUE_ITEMS = [
    {
        "guid": "klue-sts-v1_dev_00000",
        "source": "airbnb-rtt",
        "sentence1": "무엇보다도 호스트분들이 너무 친절하셨습니다.",
        "sentence2": "무엇보다도, 호스트들은 매우 친절했습니다.",
        "labels": {"label": 4.9, "real-label": 4.857142857142857, "binary-label": 1},
        "annotations": {"agreement": "0:0:0:0:1:6", "annotators": ["07", "13"], "annotations": [5, 4]},
    },
    {
        "guid": "klue-sts-v1_dev_00001",
        "source": "policy-sampled",
        "sentence1": "주요 관광지 모두 걸어서 이동가능합니다.",
        "sentence2": "위치는 피렌체 중심가까지 걸어서 이동 가능합니다.",
        "labels": {"label": 1.4, "real-label": 1.428571428571429, "binary-label": 0},
    },
]


@pytest.mark.parametrize("fmt", ["auto", "klue"])
def test_klue_json(tmp_path: Path, fmt: str) -> None:
    path = write(tmp_path / "klue-sts-v1.1_dev.json", json.dumps(KLUE_ITEMS, ensure_ascii=False, indent=4))
    data = read_sts(path, fmt)
    assert data.sentences1 == [item["sentence1"] for item in KLUE_ITEMS]
    assert data.sentences2 == [item["sentence2"] for item in KLUE_ITEMS]
    assert data.scores == [4.9, 1.4]


@pytest.mark.parametrize("fmt", ["auto", "klue"])
def test_klue_jsonl(tmp_path: Path, fmt: str) -> None:
    text = "\n".join(json.dumps(item, ensure_ascii=False) for item in KLUE_ITEMS) + "\n\n"
    data = read_sts(write(tmp_path / "klue.jsonl", text), fmt)
    assert data.scores == [4.9, 1.4]
    assert data.sentences2[1] == KLUE_ITEMS[1]["sentence2"]


def test_generic_csv_with_header_and_legitimate_quotes(tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "score", "sentence1", "sentence2"])
        writer.writerow(["a", "4.5", 'He said "hi", then left.', "line one\nline two"])
        writer.writerow(["b", "0", "plain", "text"])
    for fmt in ("auto", "generic"):
        data = read_sts(path, fmt)
        assert data.sentences1 == ['He said "hi", then left.', "plain"]
        assert data.sentences2 == ["line one\nline two", "text"]
        assert data.scores == [4.5, 0.0]


def test_generic_column_names(tmp_path: Path) -> None:
    path = write(tmp_path / "pairs.tsv", 'label\tleft\tright\n2.5\ta "b\tc\n1\td\te\n')
    data = read_sts(path, sentence1="left", sentence2="right", score="label")
    assert data.sentences1 == ['a "b', "d"]
    assert data.sentences2 == ["c", "e"]
    assert data.scores == [2.5, 1.0]


def test_generic_column_indices_without_header(tmp_path: Path) -> None:
    path = write(tmp_path / "pairs.tsv", "x\t0.8\ty\np\t0.1\tq\n")
    data = read_sts(path, "generic", sentence1=0, sentence2=2, score=1, max_score=1.0)
    assert data.sentences1 == ["x", "p"]
    assert data.sentences2 == ["y", "q"]
    assert data.scores == [0.8, 0.1]
    assert data.normalized_scores(1.0) == [0.8, 0.1]


def test_generic_indices_with_header_and_explicit_delimiter(tmp_path: Path) -> None:
    path = write(tmp_path / "pairs.txt", "a|b|s\nx|y|4\n")
    data = read_sts(path, sentence1=0, sentence2=1, score=2, has_header=True, delimiter="|")
    assert (data.sentences1, data.sentences2, data.scores) == (["x"], ["y"], [4.0])


def test_generic_quoting_option(tmp_path: Path) -> None:
    path = write(tmp_path / "pairs.csv", 'sentence1,sentence2,score\n"a,b",c,1\n')
    assert read_sts(path).sentences1 == ["a,b"]
    with pytest.raises(DataFormatError, match="line 2: 4 fields"):
        read_sts(path, quoting=csv.QUOTE_NONE)


def test_generic_jsonl(tmp_path: Path) -> None:
    text = (
        '{"sentence1": "a", "sentence2": "b", "score": 3}\n'
        '{"sentence1": "c", "sentence2": "d", "score": "1.5"}\n'
    )
    data = read_sts(write(tmp_path / "pairs.jsonl", text))
    assert (data.sentences1, data.sentences2, data.scores) == (["a", "c"], ["b", "d"], [3.0, 1.5])
    named = read_sts(
        write(tmp_path / "named.jsonl", '{"q": "x", "d": "y", "sim": 0.25}\n'),
        sentence1="q",
        sentence2="d",
        score="sim",
    )
    assert (named.sentences1, named.sentences2, named.scores) == (["x"], ["y"], [0.25])


@pytest.mark.parametrize(
    ("name", "text", "kwargs"),
    [
        ("k.tsv", KORSTS_HEADER + "\n" + korsts_row("1", "a", "b") + "\n", {}),
        ("s.csv", "g\tf\ty\ti\t1\ta\tb\textra\n", {}),
        ("k.json", json.dumps([{"sentence1": "a", "sentence2": "b", "labels": {"label": 1}}]), {}),
        ("g.csv", "sentence1,sentence2,score\na,b,1\n", {}),
    ],
)
def test_gzip_works_for_every_format(tmp_path: Path, name: str, text: str, kwargs: dict[str, object]) -> None:
    path = tmp_path / (name + ".gz")
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    data = read_sts(path, **kwargs)  # type: ignore[arg-type]
    assert (data.sentences1, data.sentences2, data.scores) == (["a"], ["b"], [1.0])


def test_bom_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    path.write_bytes("\ufeffsentence1,sentence2,score\r\na,b,2\r\n".encode())
    data = read_sts(path)
    assert (data.sentences1, data.sentences2, data.scores) == (["a"], ["b"], [2.0])


def test_stsdata() -> None:
    data = STSData(["a", "b"], ["c", "d"], [5.0, 2.5], source="mem")
    assert len(data) == 2
    assert data.normalized_scores() == [1.0, 0.5]
    assert data.normalized_scores(10.0) == [0.5, 0.25]
    with pytest.raises(ValueError, match="differ in length"):
        STSData(["a"], ["b", "c"], [1.0])


# -- malformed input -------------------------------------------------------------------------------

TSV_HEAD = "sentence1\tsentence2\tscore\n"


@pytest.mark.parametrize(
    ("name", "text", "fmt", "line", "message"),
    [
        ("sts-test.tsv", TSV_HEAD + "a\tb\t1\n" + "c\td\tabc\n", "auto", 3, "score 'abc' is not a number"),
        ("sts-test.tsv", TSV_HEAD + "a\tb\t1\n\nc\td\t5.5\n", "generic", 4, "outside [0, 5]"),
        ("sts-test.tsv", TSV_HEAD + "a\tb\t-1\n", "generic", 2, "outside [0, 5]"),
        ("sts-test.tsv", TSV_HEAD + "a\tb\tnan\n", "generic", 2, "outside [0, 5]"),
        ("sts-test.tsv", TSV_HEAD + "a\tb\n", "generic", 2, "2 fields, but the header has 3"),
        ("sts-test.tsv", TSV_HEAD + "a\t \t1\n", "generic", 2, "'sentence2' is empty"),
        ("sts-test.tsv", "left\tright\tscore\na\tb\t1\n", "generic", 1, "no column 'sentence1'"),
        ("k.tsv", KORSTS_HEADER + "\n" + korsts_row("x", "a", "b"), "korsts", 2, "score 'x' is not a number"),
        ("k.tsv", KORSTS_HEADER + "\n" + korsts_row("9", "a", "b"), "auto", 2, "outside [0, 5]"),
        ("k.tsv", KORSTS_HEADER + "\n" + korsts_row("1", "", "b"), "auto", 2, "'sentence1' is empty"),
        ("k.tsv", KORSTS_HEADER + "\n" + korsts_row("1", "a", "b") + "\textra", "korsts", 2, "got 8"),
        (
            "k.tsv",
            KORSTS_HEADER + "\nmain\tx\t2012\t1\t2\ta\n",
            "korsts",
            2,
            "expected 7 tab-separated fields",
        ),
        ("k.tsv", "genre\tscore\n", "korsts", 1, "expected the KorSTS header"),
        ("s.csv", "g\tf\ty\ti\t1\ta\tb\ng\tf\ty\ti\t1\ta\n", "stsb", 2, "at least 7 tab-separated fields"),
        ("s.csv", "g\tf\ty\ti\t1\ta\tb\n\ng\tf\ty\ti\t?\ta\tb\n", "auto", 3, "score '?' is not a number"),
        ("s.csv", "g\tf\ty\ti\t1\ta\tb\ng\tf\ty\ti\t1\t\tb\n", "stsb", 2, "'sentence1' is empty"),
        (
            "j.jsonl",
            '{"sentence1": "a", "sentence2": "b", "score": 1}\n{"sentence1": "a"',
            "auto",
            2,
            "invalid JSON",
        ),
        (
            "j.jsonl",
            '{"sentence1": "a", "sentence2": "b", "score": 1}\n{"sentence1": "a", "score": 1}',
            "auto",
            2,
            "'sentence2' is missing",
        ),
        ("j.jsonl", '{"sentence1": "a", "sentence2": "b"}\n', "generic", 1, "no 'score' field"),
        ("j.jsonl", '{"sentence1": "a", "sentence2": 7, "score": 1}\n', "generic", 1, "'sentence2' is int"),
        ("j.jsonl", '{"sentence1": "a", "sentence2": "b", "score": true}\n', "generic", 1, "not a number"),
        (
            "klue.json",
            '[\n {"sentence1": "a", "sentence2": "b", "labels": {"label": 1}},\n'
            ' {"sentence1": "a", "sentence2": "b", "labels": {"real-label": 1}}\n]',
            "klue",
            3,
            "missing labels.label",
        ),
        (
            "klue.json",
            '[\n {"sentence1": "a", "sentence2": "b", "labels": {"label": 1}},\n\n'
            ' {"sentence1": "a", "sentence2": "b", "labels": {"label": 6}}\n]',
            "auto",
            4,
            "outside [0, 5]",
        ),
        (
            "klue.json",
            '[\n {"sentence1": "a", "sentence2": "b", "labels": {"label": 1}}\n {"sentence1": "a"}]',
            "klue",
            3,
            "expected ',' or ']'",
        ),
        (
            "klue.json",
            '[\n {"sentence1": "a", "sentence2": "b", "labels": {"label": 1}},\n 5\n]',
            "klue",
            3,
            "expected a JSON object",
        ),
        (
            "klue.jsonl",
            '{"sentence1": "a", "sentence2": "", "labels": {"label": 1}}\n',
            "auto",
            1,
            "is empty",
        ),
    ],
)
def test_malformed_rows_name_file_and_line(
    tmp_path: Path, name: str, text: str, fmt: str, line: int, message: str
) -> None:
    path = write(tmp_path / name, text)
    with pytest.raises(DataFormatError) as info:
        read_sts(path, fmt)
    error = str(info.value)
    assert str(path) in error
    assert f"line {line}:" in error
    assert message in error
    assert isinstance(info.value, ValueError)


def test_message_matches_documented_shape(tmp_path: Path) -> None:
    path = write(tmp_path / "sts-test.tsv", TSV_HEAD + "a\tb\tabc\n")
    with pytest.raises(DataFormatError, match=r"sts-test\.tsv line 2: score 'abc' is not a number$"):
        read_sts(path)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("empty.tsv", b""),
        ("blank.tsv", b"\n\n  \n"),
        ("header-only.tsv", TSV_HEAD.encode()),
        ("korsts-header-only.tsv", KORSTS_HEADER.encode() + b"\n"),
        ("empty.json", b"[]"),
        ("empty.jsonl", b"\n"),
        ("empty.tsv.gz", gzip.compress(b"")),
    ],
)
def test_empty_files_raise(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DataFormatError, match="no sentence pairs"):
        read_sts(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.tsv"
    with pytest.raises(FileNotFoundError, match=r"nope\.tsv"):
        read_sts(path)


def test_corrupt_gzip_and_bad_utf8(tmp_path: Path) -> None:
    gz = tmp_path / "bad.tsv.gz"
    gz.write_bytes(gzip.compress(b"sentence1\tsentence2\tscore\n")[:15])
    with pytest.raises(DataFormatError, match=r"bad\.tsv\.gz"):
        read_sts(gz)
    latin = tmp_path / "latin.tsv"
    latin.write_bytes(TSV_HEAD.encode() + b"a\tb\t1\ncaf\xe9\tb\t1\n")
    with pytest.raises(DataFormatError, match=r"latin\.tsv line 3: not valid UTF-8"):
        read_sts(latin)


def test_option_errors(tmp_path: Path) -> None:
    path = write(tmp_path / "p.tsv", TSV_HEAD + "a\tb\t1\n")
    with pytest.raises(ValueError, match="unknown STS format"):
        read_sts(path, "sick")
    with pytest.raises(ValueError, match="only apply to format='generic'"):
        read_sts(path, "korsts", sentence1="a")
    with pytest.raises(ValueError, match="need a header row"):
        read_sts(path, sentence1="sentence1", has_header=False)
    with pytest.raises(ValueError, match="min_score"):
        read_sts(path, min_score=5, max_score=1)
    with pytest.raises(ValueError, match="0 or more"):
        read_sts(path, sentence1=-1, sentence2=1, score=2)


def test_score_range_is_configurable(tmp_path: Path) -> None:
    path = write(tmp_path / "p.tsv", TSV_HEAD + "a\tb\t80\n")
    with pytest.raises(DataFormatError, match="outside"):
        read_sts(path)
    assert read_sts(path, max_score=100).normalized_scores(100) == [0.8]
