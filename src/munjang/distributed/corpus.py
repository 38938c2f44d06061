"""A corpus to encode at scale: many files (or folders, or glob patterns) read as (id, text) rows in
one fixed order, so that the same inputs always cut into the same shards.

Text formats (txt, jsonl, csv, tsv, optionally gzipped) go through `munjang.data.read_records`;
parquet through pyarrow. Every row must carry a non-blank text; a row without an id gets
`<file>:<line>` (`<file>:<row>` for parquet), and ids must be unique across the corpus. Errors name the
file and line.
"""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util.extras import require
from ..data.texts import TEXT_FORMATS, detect_text_format, read_records
from ..errors import DataFormatError

CORPUS_FORMATS = (*TEXT_FORMATS, "parquet")
# What a folder given as input contributes: files with these endings (".gz" looked through).
_FOLDER_SUFFIXES = (".txt", ".jsonl", ".json", ".ndjson", ".csv", ".tsv", ".parquet")


def require_pyarrow() -> Any:
    """pyarrow, or an error saying which extra installs it (it comes with `munjang[ray]`)."""
    return require("pyarrow")


@dataclass
class Corpus:
    """Rows in corpus order, the files they came from, and a digest of every (id, text)."""

    ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    sha256: str = ""

    def __len__(self) -> int:
        return len(self.texts)


def expand_inputs(inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Files named by `inputs`, in order: a file as it is, a folder's corpus files (recursively, sorted),
    a glob pattern's matches (sorted). A file named twice is read once."""
    items = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    if not items:
        raise ValueError("no inputs given")
    files: list[Path] = []
    for item in items:
        text = os.fspath(item)
        path = Path(text).expanduser()
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
                and p.name.lower().removesuffix(".gz").endswith(_FOLDER_SUFFIXES)
            )
            if not found:
                raise FileNotFoundError(
                    f"{text}: no corpus files in the folder ({', '.join(_FOLDER_SUFFIXES)})"
                )
            files.extend(found)
        elif any(c in text for c in "*?["):
            matched = sorted(Path(p) for p in glob.glob(os.path.expanduser(text), recursive=True))
            matched = [p for p in matched if p.is_file()]
            if not matched:
                raise FileNotFoundError(f"{text}: the pattern matches no file")
            files.extend(matched)
        else:
            raise FileNotFoundError(f"{text}: no such file or folder")
    unique: dict[Path, Path] = {}
    for f in files:
        unique.setdefault(f.resolve(), f)
    return list(unique.values())


def _file_format(path: Path, format: str) -> str:
    if format != "auto":
        return format
    name = path.name.lower().removesuffix(".gz")
    return "parquet" if name.endswith(".parquet") else detect_text_format(path)


def _parquet_rows(path: Path, text_field: str, id_field: str | None) -> Iterable[tuple[int, str | None, Any]]:
    """(row number, id or None, text value) of a parquet file; column types checked."""
    pa = require_pyarrow()
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as e:
        raise DataFormatError(f"{path}: not a readable parquet file ({e})") from e
    if text_field not in schema.names:
        raise DataFormatError(f"{path}: no column {text_field!r} (columns: {', '.join(schema.names)})")
    text_type = schema.field(text_field).type
    if not (pa.types.is_string(text_type) or pa.types.is_large_string(text_type)):
        raise DataFormatError(f"{path}: column {text_field!r} is {text_type}, not text")
    has_id = bool(id_field) and id_field in schema.names
    if has_id:
        id_type = schema.field(id_field).type
        if not (
            pa.types.is_string(id_type) or pa.types.is_large_string(id_type) or pa.types.is_integer(id_type)
        ):
            raise DataFormatError(f"{path}: column {id_field!r} is {id_type}, not text or an integer")
    table = pq.read_table(path, columns=[text_field, id_field] if has_id else [text_field])
    texts = table.column(text_field).to_pylist()
    ids = table.column(id_field).to_pylist() if has_id else [None] * len(texts)
    for row, (doc_id, text) in enumerate(zip(ids, texts, strict=True), start=1):
        if has_id and doc_id is None:
            raise DataFormatError(f"{path} row {row}: {id_field!r} is null")
        yield row, None if doc_id is None else str(doc_id), text


def _file_rows(
    path: Path, format: str, text_field: str, id_field: str | None
) -> Iterable[tuple[str, str | None, Any]]:
    """(place, id or None, text) of one file; `place` is "line N" or "row N"."""
    kind = _file_format(path, format)
    if kind == "parquet":
        for row, doc_id, text in _parquet_rows(path, text_field, id_field):
            yield f"row {row}", doc_id, text
        return
    for record in read_records(path, kind, text_field, id_field=id_field):
        yield f"line {record.line}", record.id, record.text


def read_corpus(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    format: str = "auto",
    text_field: str = "text",
    id_field: str | None = "id",
) -> Corpus:
    """Every row of `inputs` (see `expand_inputs`), checked, with ids and a digest of the content.

    Raises FileNotFoundError for a missing input, DataFormatError (file and line) for a malformed row,
    a null, empty or blank text, a repeated id, or a corpus without rows.
    """
    if format != "auto" and format not in CORPUS_FORMATS:
        raise ValueError(f"unknown format {format!r}; choose from auto, {', '.join(CORPUS_FORMATS)}")
    files = expand_inputs(inputs)
    base = Path(os.path.commonpath([f.resolve().parent for f in files]))
    corpus = Corpus()
    digest = hashlib.sha256()
    seen: dict[str, str] = {}
    for path in files:
        name = path.resolve().relative_to(base).as_posix()
        start = len(corpus)
        for place, doc_id, text in _file_rows(path, format, text_field, id_field):
            where = f"{path} {place}"
            if text is None:
                raise DataFormatError(f"{where}: {text_field!r} is null")
            if not isinstance(text, str):
                raise DataFormatError(f"{where}: {text_field!r} is {type(text).__name__}, not text")
            if not text.strip():
                raise DataFormatError(f"{where}: the text is empty")
            doc_id = doc_id if doc_id is not None else f"{name}:{place.split()[1]}"
            first = seen.setdefault(doc_id, where)
            if first != where:
                raise DataFormatError(f"{where}: id {doc_id!r} was already used at {first}")
            for part in (doc_id, text):
                raw = part.encode("utf-8")
                digest.update(len(raw).to_bytes(8, "little") + raw)
            corpus.ids.append(doc_id)
            corpus.texts.append(text)
        corpus.files.append({"path": str(path), "bytes": path.stat().st_size, "rows": len(corpus) - start})
    if not corpus.texts:
        raise DataFormatError(f"no rows in {', '.join(str(f) for f in files)}")
    corpus.sha256 = digest.hexdigest()
    return corpus
