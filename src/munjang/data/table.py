"""Generic tables of texts: CSV, TSV or JSON Lines with a column mapping, into training `Example`s.

`read_table` takes the texts of each row from `columns` (header names, or 0-based indices for files
without a header) and, optionally, a label. The same row checks as the STS readers apply: a row that
is short of fields, has an empty or non-string text, or a label that cannot be read raises
`DataFormatError` naming the file and the 1-based line; only blank lines are passed over. Files ending in
`.gz` (or starting with the gzip magic bytes) are decompressed transparently.

`TableFile` is the row reader underneath; the NLI and parallel-sentence readers use it too.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import DataFormatError
from .example import Example
from .sts import QUOTING_MODES, Column, RowReader

LabelType = type[float] | type[int] | Mapping[str, int]


class TableFile:
    """One CSV, TSV or JSON Lines file, read as records of chosen columns with their line numbers.

    Delimited files: the delimiter comes from the extension (``.csv`` comma, ``.tsv`` tab, otherwise
    tab if the first line has one) unless given; ``.csv`` uses standard CSV quoting and everything
    else `csv.QUOTE_NONE` (corpus TSVs carry stray ``"`` that are text), unless `quoting` says
    otherwise. A header row is expected when any column is given by name, or when `has_header=True`.
    JSON Lines (or a JSON array of objects) is recognised by the extension or a leading ``{``/``[``;
    its columns must be field names.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        delimiter: str | None = None,
        has_header: bool | None = None,
        quoting: int | None = None,
    ) -> None:
        if quoting is not None and quoting not in QUOTING_MODES:
            raise ValueError(f"quoting must be one of the csv.QUOTE_* constants, not {quoting!r}")
        file = Path(path)
        if not file.exists():
            raise FileNotFoundError(f"data file not found: {path}")
        self._reader = RowReader(file, display=os.fspath(path), min_score=0.0, max_score=0.0)
        self.display = self._reader.display
        self.is_json, self.delimiter, self.quoting = self._reader.table_layout(delimiter, has_header, quoting)
        self.has_header = has_header

    def error(self, line: int, message: str) -> DataFormatError:
        """A DataFormatError naming this file and `line`."""
        return self._reader.error(line, message)

    def empty(self, what: str = "rows") -> DataFormatError:
        """The error for a file without any records."""
        return DataFormatError(f"{self.display}: no {what} in the file")

    def text(self, value: Any, line: int, column: Column) -> str:
        """`value` as a text field: it must be a non-empty string."""
        return self._reader.sentence(value, line, column)

    def records(self, columns: Sequence[Column]) -> Iterator[tuple[int, list[Any]]]:
        """(line, values of `columns`) for every non-blank record, header and width checked."""
        for column in columns:
            if isinstance(column, bool) or not isinstance(column, (str, int)):
                raise TypeError(f"a column must be a name or a 0-based index, not {column!r}")
            if isinstance(column, int) and column < 0:
                raise ValueError(f"column index must be 0 or more, not {column}")
        if self.is_json:
            yield from self._json_records(columns)
        else:
            yield from self._reader.delimited_records(columns, self.delimiter, self.quoting, self.has_header)

    def _json_records(self, columns: Sequence[Column]) -> Iterator[tuple[int, list[Any]]]:
        numeric = [c for c in columns if not isinstance(c, str)]
        if numeric:
            raise ValueError(f"JSON records need field names, not indices {numeric}")
        names = [str(c) for c in columns]
        for line, item in self._reader.json_objects():
            missing = [name for name in names if name not in item]
            if missing:
                raise self.error(line, f"no {missing[0]!r} field")
            yield line, [item[name] for name in names]


def read_table(
    path: str | os.PathLike[str],
    columns: Sequence[Column],
    *,
    label: Column | None = None,
    label_type: LabelType = float,
    delimiter: str | None = None,
    has_header: bool | None = None,
    quoting: int | None = None,
) -> list[Example]:
    """One `Example` per row: texts from `columns` (in that order), label from `label` if given.

    `label_type` says how the label is read: `float` (a finite number, e.g. a similarity score), `int`
    (a whole number, e.g. a class index), or a mapping from label names to class indices (e.g.
    ``{"entailment": 0, "neutral": 1, "contradiction": 2}``), which turns categorical labels into the
    ints that classification losses need. See `TableFile` for the delimiter, header and quoting rules.

    Raises FileNotFoundError for a missing file, DataFormatError (file and line) for a malformed row or
    a file without rows, and ValueError or TypeError for contradictory options.
    """
    if isinstance(columns, (str, int)):
        raise TypeError("columns must be a sequence of column names or indices, e.g. ['sentence1']")
    if not columns:
        raise ValueError("columns is empty: name at least one text column")
    if not (label_type is float or label_type is int or isinstance(label_type, Mapping)):
        raise TypeError(
            f"label_type must be float, int or a mapping of label names to ints, not {label_type!r}"
        )
    table = TableFile(path, delimiter=delimiter, has_header=has_header, quoting=quoting)
    wanted = [*columns, label] if label is not None else list(columns)
    examples: list[Example] = []
    for line, values in table.records(wanted):
        texts = tuple(table.text(v, line, c) for v, c in zip(values, columns, strict=False))
        value = read_label(table, values[-1], line, label_type) if label is not None else None
        examples.append(Example(texts, value))
    if not examples:
        raise table.empty()
    return examples


def read_label(table: TableFile, value: Any, line: int, label_type: LabelType) -> float | int:
    """A label field read as `label_type` (see `read_table`); errors name the file and line."""
    if isinstance(label_type, Mapping):
        key = value.strip() if isinstance(value, str) else value
        if not isinstance(key, str) or key not in label_type:
            raise table.error(
                line, f"unknown label {value!r}; expected one of {', '.join(map(str, label_type))}"
            )
        return label_type[key]
    if isinstance(value, bool) or value is None:
        raise table.error(line, f"label {value!r} is not a number")
    if label_type is int:
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise table.error(line, f"label {value!r} is not a whole number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise table.error(line, f"label {value!r} is not a number") from None
    if not math.isfinite(number):
        raise table.error(line, f"label {value!r} is not a finite number")
    return number
