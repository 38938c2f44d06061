"""Readers for sentence-pair similarity (STS) data: KorSTS, the STS Benchmark, KLUE-STS and plain tables.

Every reader returns an `STSData` (two sentence lists and a gold score per pair) and checks every row:
a row that is short of fields, has a score that is not a number or lies outside [min_score, max_score],
or an empty sentence raises `DataFormatError` naming the file and the 1-based line. Nothing is dropped
silently; only completely blank lines are passed over. Files ending in `.gz` (or starting with the gzip
magic bytes) are decompressed transparently.

The STS TSV files contain stray, unbalanced `"` characters, so they are read with quoting turned off
(`csv.QUOTE_NONE`); with ordinary CSV quoting, rows would merge.

Formats:

- ``korsts``: tab-separated with the header ``genre filename year id score sentence1 sentence2``.
- ``stsb``: the original STS Benchmark ``sts-*.csv``: tab-separated despite the name, no header,
  columns genre, filename, year, id, score, sentence1, sentence2, and on some rows extra trailing
  source-attribution fields, which are ignored.
- ``klue``: KLUE-STS JSON (a list of objects with ``sentence1``, ``sentence2`` and
  ``labels: {"label": 0-5, ...}``), or JSON Lines with the same objects.
- ``generic``: CSV, TSV or JSON Lines with a column mapping (names with a header, or 0-based indices without).
- ``auto``: picks one of the above by looking at the file.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataFormatError
from .checks import check_same_length

FORMATS = ("auto", "korsts", "stsb", "klue", "generic")
KORSTS_HEADER = ("genre", "filename", "year", "id", "score", "sentence1", "sentence2")
STSB_MIN_FIELDS = 7
STSB_COLUMNS = (5, 6, 4)  # sentence1, sentence2, score (0-based)
DEFAULT_COLUMNS = ("sentence1", "sentence2", "score")
QUOTING_MODES = (csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC, csv.QUOTE_NONE)
# Ends the error for a column name missing from the header of a file read as the generic format.
GENERIC_HINT = " (read as a generic table; pass format= or the sentence1/sentence2/score column names)"

Column = str | int


@dataclass
class STSData:
    """Sentence pairs with a gold similarity score each; `source` says where they came from."""

    sentences1: list[str]
    sentences2: list[str]
    scores: list[float]
    source: str = ""

    def __post_init__(self) -> None:
        check_same_length(sentences1=self.sentences1, sentences2=self.sentences2, scores=self.scores)

    def __len__(self) -> int:
        return len(self.scores)

    def normalized_scores(self, max_score: float = 5.0) -> list[float]:
        """Scores divided by `max_score` (0-5 -> 0-1), the range cosine-similarity losses train towards."""
        if max_score <= 0:
            raise ValueError(f"max_score must be positive, not {max_score}")
        return [s / max_score for s in self.scores]


def read_sts(
    path: str | os.PathLike[str],
    format: str = "auto",
    *,
    sentence1: Column | None = None,
    sentence2: Column | None = None,
    score: Column | None = None,
    delimiter: str | None = None,
    has_header: bool | None = None,
    quoting: int | None = None,
    min_score: float = 0.0,
    max_score: float = 5.0,
) -> STSData:
    """Read an STS file (see the module docstring for the formats) into an `STSData`.

    The column options (`sentence1`, `sentence2`, `score`, `delimiter`, `has_header`, `quoting`) belong to
    the generic format: with `format="auto"` giving any of them means generic, and with another named format
    they are an error. Columns are header names (a header row is then expected) or 0-based indices (no
    header row unless `has_header=True`); the defaults are the names sentence1, sentence2, score. The
    delimiter comes from the extension (``.csv`` comma, ``.tsv`` tab) unless given; ``.csv`` files use
    standard CSV quoting and everything else `csv.QUOTE_NONE`, unless `quoting` (a `csv.QUOTE_*`
    constant) says otherwise.

    Raises FileNotFoundError for a missing file, DataFormatError (file and line) for malformed content or a
    file without rows, and ValueError for contradictory options.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown STS format {format!r}; choose from {', '.join(FORMATS)}")
    if quoting is not None and quoting not in QUOTING_MODES:
        raise ValueError(f"quoting must be one of the csv.QUOTE_* constants, not {quoting!r}")
    if min_score > max_score:
        raise ValueError(f"min_score {min_score} is greater than max_score {max_score}")
    generic_options = {
        "sentence1": sentence1,
        "sentence2": sentence2,
        "score": score,
        "delimiter": delimiter,
        "has_header": has_header,
        "quoting": quoting,
    }
    given = [k for k, v in generic_options.items() if v is not None]
    for name, column in (("sentence1", sentence1), ("sentence2", sentence2), ("score", score)):
        if column is not None and (isinstance(column, bool) or not isinstance(column, (str, int))):
            raise TypeError(f"{name} must be a column name or index, not {column!r}")
        if isinstance(column, int) and column < 0:
            raise ValueError(f"{name} column index must be 0 or more, not {column}")
    if given and format not in ("auto", "generic"):
        raise ValueError(f"{', '.join(given)} only apply to format='generic', not {format!r}")

    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"STS data file not found: {path}")
    reader = RowReader(file, display=os.fspath(path), min_score=min_score, max_score=max_score)

    if format == "auto":
        format = "generic" if given else reader.detect()
    if format == "korsts":
        return reader.korsts()
    if format == "stsb":
        return reader.stsb()
    if format == "klue":
        return reader.klue()
    columns = (
        DEFAULT_COLUMNS[0] if sentence1 is None else sentence1,
        DEFAULT_COLUMNS[1] if sentence2 is None else sentence2,
        DEFAULT_COLUMNS[2] if score is None else score,
    )
    return reader.generic(columns, delimiter=delimiter, has_header=has_header, quoting=quoting)


def _inner_suffix(path: Path) -> str:
    """The extension that says what the content is: `.tsv` for `x.tsv.gz`."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


class RowReader:
    """One file's text, plus the row checks shared by every format."""

    def __init__(self, path: Path, display: str, min_score: float, max_score: float) -> None:
        self.path = path
        self.display = display
        self.min_score = min_score
        self.max_score = max_score
        self.suffix = _inner_suffix(path)
        self.text = self._load()

    # -- loading -------------------------------------------------------------------------------
    def _load(self) -> str:
        raw = self.path.read_bytes()
        if raw[:2] == b"\x1f\x8b" or self.path.suffix.lower() == ".gz":
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError, zlib.error) as err:
                raise DataFormatError(f"{self.display}: not a readable gzip file ({err})") from err
        try:
            return raw.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            line = raw.count(b"\n", 0, err.start) + 1
            raise DataFormatError(f"{self.display} line {line}: not valid UTF-8 ({err.reason})") from err

    def error(self, line: int, message: str) -> DataFormatError:
        return DataFormatError(f"{self.display} line {line}: {message}")

    def result(self, s1: list[str], s2: list[str], scores: list[float]) -> STSData:
        if not scores:
            raise DataFormatError(f"{self.display}: no sentence pairs in the file")
        return STSData(s1, s2, scores, source=self.display)

    # -- field checks --------------------------------------------------------------------------
    def sentence(self, value: Any, line: int, column: Column) -> str:
        if value is None:
            raise self.error(line, f"{_col(column)} is missing")
        if not isinstance(value, str):
            raise self.error(line, f"{_col(column)} is {type(value).__name__}, not a string")
        if not value.strip():
            raise self.error(line, f"{_col(column)} is empty")
        return value

    def score(self, value: Any, line: int) -> float:
        if isinstance(value, bool) or value is None:
            raise self.error(line, f"score {value!r} is not a number")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise self.error(line, f"score {value!r} is not a number") from None
        if math.isnan(number) or not self.min_score <= number <= self.max_score:
            raise self.error(line, f"score {value!r} is outside [{self.min_score:g}, {self.max_score:g}]")
        return number

    # -- detection -----------------------------------------------------------------------------
    def first_line(self) -> str:
        for line in self.text.split("\n"):
            if line.strip():
                return line.rstrip("\r")
        return ""

    def detect(self) -> str:
        """Name the format from the content: KorSTS header, STSb row shape, KLUE `labels`, else generic."""
        first = self.first_line()
        if not first:
            raise DataFormatError(f"{self.display}: no sentence pairs in the file")
        if self.suffix in (".json", ".jsonl") or first.lstrip()[:1] in ("[", "{"):
            records = self.json_records()
            try:
                _, item = next(records)
            except StopIteration:
                raise DataFormatError(f"{self.display}: no sentence pairs in the file") from None
            return "klue" if isinstance(item, dict) and "labels" in item else "generic"
        fields = first.split("\t")
        if tuple(fields) == KORSTS_HEADER:
            return "korsts"
        if len(fields) >= STSB_MIN_FIELDS:
            try:
                float(fields[4])
            except ValueError:
                pass
            else:
                return "stsb"
        return "generic"

    # -- delimited text ------------------------------------------------------------------------
    def rows(self, delimiter: str = "\t", quoting: int = csv.QUOTE_NONE) -> Iterator[tuple[int, list[str]]]:
        """(first line number, fields) for every non-blank record."""
        options: dict[str, Any] = {"delimiter": delimiter, "quoting": quoting}
        reader = csv.reader(io.StringIO(self.text, newline=""), **options)
        while True:
            start = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as err:
                raise self.error(start, f"cannot parse the row ({err})") from err
            if fields:
                yield start, fields

    def korsts(self) -> STSData:
        rows = self.rows()
        header = next(rows, None)
        if header is None:
            raise DataFormatError(f"{self.display}: no sentence pairs in the file")
        line, fields = header
        if tuple(fields) != KORSTS_HEADER:
            raise self.error(line, f"expected the KorSTS header {' '.join(KORSTS_HEADER)!r}, got {fields!r}")
        s1: list[str] = []
        s2: list[str] = []
        scores: list[float] = []
        for line, fields in rows:
            if len(fields) != len(KORSTS_HEADER):
                raise self.error(
                    line, f"expected {len(KORSTS_HEADER)} tab-separated fields, got {len(fields)}"
                )
            scores.append(self.score(fields[4], line))
            s1.append(self.sentence(fields[5], line, "sentence1"))
            s2.append(self.sentence(fields[6], line, "sentence2"))
        return self.result(s1, s2, scores)

    def stsb(self) -> STSData:
        s1: list[str] = []
        s2: list[str] = []
        scores: list[float] = []
        i1, i2, iscore = STSB_COLUMNS
        for line, fields in self.rows():
            if len(fields) < STSB_MIN_FIELDS:
                raise self.error(
                    line, f"expected at least {STSB_MIN_FIELDS} tab-separated fields, got {len(fields)}"
                )
            scores.append(self.score(fields[iscore], line))
            s1.append(self.sentence(fields[i1], line, "sentence1"))
            s2.append(self.sentence(fields[i2], line, "sentence2"))
        return self.result(s1, s2, scores)

    def generic(
        self,
        columns: tuple[Column, Column, Column],
        *,
        delimiter: str | None,
        has_header: bool | None,
        quoting: int | None,
    ) -> STSData:
        is_json, delimiter, quoting = self.table_layout(delimiter, has_header, quoting)
        if is_json:
            return self.generic_json(columns)
        s1: list[str] = []
        s2: list[str] = []
        scores: list[float] = []
        records = self.delimited_records(columns, delimiter, quoting, has_header, GENERIC_HINT)
        for line, (sentence1, sentence2, score) in records:
            scores.append(self.score(score, line))
            s1.append(self.sentence(sentence1, line, columns[0]))
            s2.append(self.sentence(sentence2, line, columns[1]))
        return self.result(s1, s2, scores)

    # -- tables (the generic format here, every format of `TableFile`) -------------------------
    def table_layout(
        self, delimiter: str | None, has_header: bool | None, quoting: int | None
    ) -> tuple[bool, str, int]:
        """(is JSON, delimiter, csv quoting) for reading this file as a table.

        JSON (or JSON Lines) by the extension or a leading ``[``/``{``, and then the delimited-file
        options must be unset. Otherwise the delimiter defaults to `delimiter_for`, and quoting to
        standard CSV quoting for ``.csv``, `csv.QUOTE_NONE` for anything else.
        """
        first = self.first_line()
        is_json = self.suffix in (".json", ".jsonl") or first.lstrip()[:1] in ("[", "{")
        if is_json and (delimiter is not None or has_header is not None or quoting is not None):
            raise ValueError("delimiter, has_header and quoting do not apply to JSON files")
        if delimiter is None:
            delimiter = delimiter_for(self.suffix, first)
        if quoting is None:
            quoting = csv.QUOTE_MINIMAL if self.suffix == ".csv" else csv.QUOTE_NONE
        return is_json, delimiter, quoting

    def delimited_records(
        self,
        columns: Sequence[Column],
        delimiter: str,
        quoting: int,
        has_header: bool | None,
        missing_hint: str = "",
    ) -> Iterator[tuple[int, list[str]]]:
        """(line, the fields of `columns`) for every row of a delimited file, header and width checked.

        A header row is read when `has_header`, or (None) when a column is given by name; then every
        row must be as wide as the header. `missing_hint` ends the error for a name the header lacks.
        """
        by_name = [c for c in columns if isinstance(c, str)]
        if has_header is None:
            has_header = bool(by_name)
        if by_name and not has_header:
            raise ValueError(f"columns given by name ({', '.join(by_name)}) need a header row")
        rows = self.rows(delimiter, quoting)
        width: int | None = None
        if has_header:
            header = next(rows, None)
            if header is None:
                return
            line, names = header
            width = len(names)
            indices = [self.header_index(c, names, line, missing_hint) for c in columns]
        else:
            indices = [int(c) for c in columns]
        need = max(indices) + 1
        for line, fields in rows:
            if width is not None and len(fields) != width:
                raise self.error(line, f"{len(fields)} fields, but the header has {width}")
            if len(fields) < need:
                raise self.error(line, f"{len(fields)} fields, need at least {need}")
            yield line, [fields[i] for i in indices]

    def header_index(self, column: Column, names: Sequence[str], line: int, missing_hint: str = "") -> int:
        if isinstance(column, int):
            if not 0 <= column < len(names):
                raise self.error(line, f"column index {column} is outside the header's {len(names)} columns")
            return column
        stripped = [n.strip() for n in names]
        if column not in stripped:
            raise self.error(line, f"no column {column!r} in the header {stripped!r}{missing_hint}")
        return stripped.index(column)

    # -- JSON ----------------------------------------------------------------------------------
    def json_records(self) -> Iterator[tuple[int, Any]]:
        """(line number, value) for each item of a JSON array, or each non-blank line of JSON Lines."""
        text = self.text
        start = len(text) - len(text.lstrip())
        if text[start : start + 1] == "[":
            yield from self._json_array(start)
            return
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as err:
                raise self.error(number, f"invalid JSON ({err.msg} at column {err.colno})") from err

    def json_objects(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, object) for each record of `json_records`; a record that is not an object raises."""
        for line, item in self.json_records():
            if not isinstance(item, dict):
                raise self.error(line, f"expected a JSON object, got {type(item).__name__}")
            yield line, item

    def _json_array(self, start: int) -> Iterator[tuple[int, Any]]:
        """Items of the JSON array opening at `start`, each with the line it starts on."""
        text = self.text
        decoder = json.JSONDecoder()

        def skip(p: int) -> int:
            while p < len(text) and text[p] in " \t\r\n":
                p += 1
            return p

        def fail(p: int, message: str) -> DataFormatError:
            return self.error(1 + text.count("\n", 0, p), message)

        line, counted = 1, 0
        pos = skip(start + 1)
        if text[pos : pos + 1] == "]":
            return
        while True:
            line += text.count("\n", counted, pos)
            counted = pos
            try:
                value, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as err:
                raise fail(err.pos, f"invalid JSON ({err.msg})") from err
            yield line, value
            pos = skip(end)
            if text[pos : pos + 1] == ",":
                pos = skip(pos + 1)
                continue
            if text[pos : pos + 1] == "]":
                if text[pos + 1 :].strip():
                    raise fail(skip(pos + 1), "unexpected text after the JSON array")
                return
            raise fail(pos, "expected ',' or ']' in the JSON array")

    def klue(self) -> STSData:
        s1: list[str] = []
        s2: list[str] = []
        scores: list[float] = []
        for line, item in self.json_objects():
            labels = item.get("labels")
            if not isinstance(labels, dict) or "label" not in labels:
                raise self.error(line, "missing labels.label (the 0-5 similarity score)")
            scores.append(self.score(labels["label"], line))
            s1.append(self.sentence(item.get("sentence1"), line, "sentence1"))
            s2.append(self.sentence(item.get("sentence2"), line, "sentence2"))
        return self.result(s1, s2, scores)

    def generic_json(self, columns: tuple[Column, Column, Column]) -> STSData:
        numeric = [c for c in columns if not isinstance(c, str)]
        if numeric:
            raise ValueError(f"JSON records need column names, not indices {numeric}")
        name1, name2, name_score = (str(c) for c in columns)
        s1: list[str] = []
        s2: list[str] = []
        scores: list[float] = []
        for line, item in self.json_objects():
            if name_score not in item:
                raise self.error(line, f"no {name_score!r} field")
            scores.append(self.score(item[name_score], line))
            s1.append(self.sentence(item.get(name1), line, name1))
            s2.append(self.sentence(item.get(name2), line, name2))
        return self.result(s1, s2, scores)


def delimiter_for(suffix: str, first_line: str) -> str:
    """The column delimiter: comma for .csv, tab for .tsv, else what the first line shows."""
    if suffix == ".csv":
        return ","
    if suffix == ".tsv":
        return "\t"
    return "\t" if "\t" in first_line else ","


def _col(column: Column) -> str:
    return f"column {column}" if isinstance(column, int) else repr(column)
