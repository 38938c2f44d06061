"""Reading the line files search teams keep (user dictionaries, synonym files): every malformed line
reported by number, a bound on how many entries are read, and nothing returned half-way."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from ...errors import DataFormatError

T = TypeVar("T")


def parse_lines(
    lines: Iterable[str],
    clean: Callable[[str], str],
    parse: Callable[[str], T],
    *,
    source: str,
    limit: int,
    unit: str,
) -> list[T]:
    """`parse(clean(line))` of each line that `clean` leaves non-empty (comments and blanks cleaned
    away); a `DataFormatError` naming `source` and every bad line (`parse` raised ValueError), or the
    line past `limit` entries (`unit`: what an entry is called), instead of a partial list."""
    entries: list[T] = []
    problems: list[str] = []
    for number, raw in enumerate(lines, 1):
        line = clean(raw)
        if not line:
            continue
        try:
            entries.append(parse(line))
        except ValueError as e:
            problems.append(f"line {number}: {e}")
        if len(entries) > limit:
            problems.append(f"line {number}: more than {limit:,} {unit}")
            break
    if problems:
        shown = "; ".join(problems[:20]) + (f"; and {len(problems) - 20} more" if len(problems) > 20 else "")
        raise DataFormatError(f"{source}: nothing loaded, {len(problems)} malformed line(s): {shown}")
    return entries
