"""Reading sentences to encode: plain text (one per line), JSON Lines, CSV or TSV with a text column."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
from pathlib import Path

from ..errors import DataFormatError

TEXT_FORMATS = ("txt", "jsonl", "csv", "tsv")


def detect_text_format(path: Path) -> str:
    """The format implied by the file name (".gz" is looked through)."""
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    suffix = suffixes[-1].lstrip(".") if suffixes else "txt"
    return {"json": "jsonl", "ndjson": "jsonl", "text": "txt"}.get(
        suffix, suffix if suffix in TEXT_FORMATS else "txt"
    )


def read_texts(path: str | os.PathLike[str], format: str = "auto", field: str = "text") -> list[str]:
    """Sentences from `path`, in file order.

    - txt: every line is a sentence (an empty line is an empty sentence; the final newline is not).
    - jsonl: every non-blank line is an object; `field` names the text.
    - csv / tsv: a header row; `field` names the text column. TSV is read without quote handling.

    A malformed line raises `DataFormatError` naming the file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    kind = detect_text_format(path) if format == "auto" else format
    if kind not in TEXT_FORMATS:
        raise ValueError(f"unknown text format {format!r}; choose from auto, {', '.join(TEXT_FORMATS)}")
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataFormatError(f"{path}: not UTF-8 text (byte {e.start})") from e
    if kind == "txt":
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [line.removesuffix("\r") for line in lines]
    if kind == "jsonl":
        return _jsonl(path, text, field)
    return _delimited(path, text, field, "," if kind == "csv" else "\t")


def _jsonl(path: Path, text: str, field: str) -> list[str]:
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataFormatError(f"{path} line {number}: not valid JSON ({e.msg})") from e
        if not isinstance(record, dict) or field not in record:
            raise DataFormatError(f"{path} line {number}: no {field!r} field")
        if not isinstance(record[field], str):
            raise DataFormatError(
                f"{path} line {number}: {field!r} is {type(record[field]).__name__}, not text"
            )
        out.append(record[field])
    return out


def _delimited(path: Path, text: str, field: str, delimiter: str) -> list[str]:
    # CSV written by ordinary tools quotes fields; TSV corpora carry stray quotes that are text.
    reader = csv.reader(
        io.StringIO(text, newline=""),
        delimiter=delimiter,
        quoting=csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE,
    )
    try:
        header = next(reader)
    except StopIteration:
        raise DataFormatError(f"{path}: empty file, expected a header row") from None
    if field not in header:
        raise DataFormatError(f"{path} line 1: no column {field!r} in the header ({', '.join(header)})")
    column = header.index(field)
    out = []
    for row in reader:
        if not row:
            continue
        if len(row) <= column:
            raise DataFormatError(f"{path} line {reader.line_num}: {len(row)} fields, no {field!r} column")
        out.append(row[column])
    return out
