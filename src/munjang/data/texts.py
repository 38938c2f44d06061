"""Reading sentences to encode or index: plain text (one per line), JSON Lines, CSV or TSV with a text
column; as texts alone, or as records with an id and metadata (the other fields). A line that is not
UTF-8 (a stray byte, or a JSON escape of a lone surrogate, which no tokenizer or database can take) is
an error naming the file and line: the whole read's, or with `on_error` that record's alone."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataFormatError

TEXT_FORMATS = ("txt", "jsonl", "csv", "tsv")


def detect_text_format(path: Path) -> str:
    """The format implied by the file name (".gz" is looked through)."""
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    suffix = suffixes[-1].lstrip(".") if suffixes else "txt"
    return {"json": "jsonl", "ndjson": "jsonl", "text": "txt"}.get(
        suffix, suffix if suffix in TEXT_FORMATS else "txt"
    )


@dataclass(frozen=True)
class TextRecord:
    """One input record: its text, its id if the file gives one, the other fields, and its line."""

    text: str
    id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    line: int = 0


def read_texts(path: str | os.PathLike[str], format: str = "auto", field: str = "text") -> list[str]:
    """Sentences from `path`, in file order (see `read_records` for the formats)."""
    return [r.text for r in read_records(path, format, field, id_field=None)]


def read_records(
    path: str | os.PathLike[str],
    format: str = "auto",
    field: str = "text",
    id_field: str | None = "id",
    on_error: Callable[[DataFormatError], None] | None = None,
) -> list[TextRecord]:
    """Records from `path`, in file order.

    - txt: every line is a sentence (an empty line is an empty sentence; the final newline is not);
      no ids, no metadata.
    - jsonl: every non-blank line is an object; `field` names the text, `id_field` (when present in
      the record) its id (a string or an integer), and every other field is metadata.
    - csv / tsv: a header row; `field` names the text column, `id_field` the id column if there is
      one, the other columns are metadata (as text). TSV is read without quote handling.

    A malformed line raises `DataFormatError` naming the file and line; with `on_error`, a line that
    is not UTF-8 is passed to it and left out instead, and the rest are read.
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
    text = raw.decode("utf-8-sig", errors="surrogateescape")  # a bad byte: a lone surrogate, found per line
    if kind == "txt":
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        found = [TextRecord(line.removesuffix("\r"), line=n) for n, line in enumerate(lines, start=1)]
    elif kind == "jsonl":
        found = _jsonl(path, text, field, id_field)
    else:
        found = _delimited(path, text, field, id_field, "," if kind == "csv" else "\t")
    return [record for record in found if _utf8(record, path, on_error)]


def _utf8(record: TextRecord, path: Path, on_error: Callable[[DataFormatError], None] | None) -> bool:
    """Whether the record's text, id and metadata are UTF-8 (no lone surrogate); if not, its error is
    raised, or passed to `on_error`."""
    try:
        if not record.text.isascii():
            record.text.encode("utf-8")
        if record.metadata or record.id:
            json.dumps([record.id, record.metadata], ensure_ascii=False).encode("utf-8")
        return True
    except UnicodeEncodeError:
        error = DataFormatError(
            f"{path} line {record.line}: not UTF-8 text (a byte that is not UTF-8, or a lone surrogate)"
        )
    if on_error is None:
        raise error
    on_error(error)
    return False


def _jsonl(path: Path, text: str, field: str, id_field: str | None) -> list[TextRecord]:
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
        doc_id = record.get(id_field) if id_field else None
        if doc_id is not None:
            if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
                raise DataFormatError(f"{path} line {number}: {id_field!r} must be text or an integer")
            doc_id = str(doc_id)
        metadata = {k: v for k, v in record.items() if k not in (field, id_field)}
        out.append(TextRecord(record[field], doc_id, metadata, number))
    return out


def _delimited(path: Path, text: str, field: str, id_field: str | None, delimiter: str) -> list[TextRecord]:
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
    id_column = header.index(id_field) if id_field and id_field in header else None
    out = []
    for row in reader:
        if not row:
            continue
        if len(row) != len(header):
            raise DataFormatError(
                f"{path} line {reader.line_num}: {len(row)} fields, the header has {len(header)}"
            )
        metadata = {
            name: value
            for i, (name, value) in enumerate(zip(header, row, strict=True))
            if i not in (column, id_column)
        }
        doc_id = row[id_column] if id_column is not None else None
        out.append(TextRecord(row[column], doc_id, metadata, reader.line_num))
    return out
