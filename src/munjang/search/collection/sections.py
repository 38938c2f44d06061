"""A document's outline: where its sections, tables and pages lie, as the office readers record it in
the metadata field "sections", and what a hit's offset says about its place in the document.

The field is a list of spans that tile the text in order, each a mapping with
- "start", "end": character offsets into the document's text;
- "heading": the section path, outermost first (["1. 개요", "1.1 목적"]), possibly empty;
- "kind": "text", or "table" (one row per line, each row with its column headers);
- optional "page", "slide", "sheet", "table" (the table's number in the document, from 1).

The passage planner (`passages.py`) cuts a document with an outline section by section: a passage
never spans two sections, carries the section path after the document title, and a table is cut
between rows only. A hit's `start` finds its section (`section_at`), and `describe` makes the
location a person reads: "p. 12, 표 3", "slide 4", "Sheet1".
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

FIELD = "sections"
KINDS = ("text", "table")
PLACES = ("page", "slide", "sheet", "table")


@dataclass(frozen=True)
class Section:
    """One span of a document's outline (see the module docstring)."""

    start: int
    end: int
    heading: tuple[str, ...] = ()
    kind: str = "text"
    page: int | None = None
    slide: int | None = None
    sheet: str | None = None
    table: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored in metadata (None fields left out)."""
        out: dict[str, Any] = {"start": self.start, "end": self.end, "heading": list(self.heading)}
        out["kind"] = self.kind
        for key in PLACES:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @property
    def path(self) -> str:
        """The heading path as one line: "1. 개요 > 1.1 목적"."""
        return " > ".join(self.heading)


def outline_of(metadata: Mapping[str, Any] | None, length: int) -> list[Section] | None:
    """The outline in `metadata` when it is well formed and tiles a text of `length` characters, else
    None (a document without one is planned as plain text)."""
    raw = (metadata or {}).get(FIELD)
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
        return None
    sections: list[Section] = []
    try:
        for item in raw:
            heading = tuple(str(h) for h in item.get("heading") or ())
            places = {k: item[k] for k in PLACES if item.get(k) is not None}
            sections.append(
                Section(
                    int(item["start"]), int(item["end"]), heading, str(item.get("kind", "text")), **places
                )
            )
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    edges_ok = sections[0].start == 0 and sections[-1].end == length
    if not edges_ok or any(a.end != b.start for a, b in pairwise(sections)):
        return None
    if any(s.end <= s.start or s.kind not in KINDS for s in sections):
        return None
    return sections


def section_at(metadata: Mapping[str, Any] | None, offset: int) -> dict[str, Any] | None:
    """The stored section (its mapping) that holds character `offset`, or None without an outline."""
    raw = (metadata or {}).get(FIELD)
    if not isinstance(raw, list) or not raw:
        return None
    try:
        starts = [int(s["start"]) for s in raw]
    except (KeyError, TypeError, ValueError):
        return None
    found = raw[max(bisect_right(starts, offset) - 1, 0)]
    return found if isinstance(found, dict) else None


def page_at(metadata: Mapping[str, Any] | None, offset: int) -> int | None:
    """The page (from 1) that holds `offset`: from the outline, or a PDF's "page_starts"."""
    section = section_at(metadata, offset)
    if section is not None:
        page = section.get("page")
        return page if isinstance(page, int) else None
    starts = (metadata or {}).get("page_starts")
    if isinstance(starts, list) and starts and all(isinstance(s, int) for s in starts):
        return bisect_right(starts, offset)
    return None


def location(metadata: Mapping[str, Any] | None, offset: int) -> dict[str, Any]:
    """Where `offset` lies: the keys of PLACES that apply, and "heading" (the path) when there is one."""
    section = section_at(metadata, offset) or {}
    out: dict[str, Any] = {k: section[k] for k in PLACES if section.get(k) is not None}
    page = page_at(metadata, offset)
    if page is not None:
        out["page"] = page
    heading = section.get("heading")
    if heading:
        out["heading"] = " > ".join(map(str, heading))
    return out


def describe(place: Mapping[str, Any]) -> str:
    """A location as a person reads it: "p. 12, 표 3", "slide 4", "Sheet1, 표 1" ("" when unknown)."""
    parts = []
    if place.get("sheet") is not None:
        parts.append(str(place["sheet"]))
    if place.get("slide") is not None:
        parts.append(f"slide {place['slide']}")
    elif place.get("page") is not None:
        parts.append(f"p. {place['page']}")
    if place.get("table") is not None:
        parts.append(f"표 {place['table']}")
    return ", ".join(parts)


def labelled(metadata: Mapping[str, Any] | None, offset: int) -> dict[str, Any]:
    """`location` with its `describe` text as "label" ({} when nothing is known): what a hit shows."""
    place = location(metadata, offset)
    return {**place, "label": describe(place)} if place else {}
