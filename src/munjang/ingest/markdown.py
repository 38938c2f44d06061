"""Markdown is read as it is written (it is meant to be readable as plain text); only YAML front
matter is taken off, and the title is the front matter's `title` or the first `# ` heading."""

from __future__ import annotations

import re
from typing import Any

import yaml

FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
FENCE = re.compile(r"^ {0,3}(```|~~~)")
HEADING = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, the rest) when `text` opens with a YAML mapping between `---` lines, else
    ({}, text): a leading `---` that is not followed by YAML key: value lines is a thematic break."""
    match = FRONT_MATTER.match(text)
    if not match:
        return {}, text
    try:
        data = yaml.safe_load(match.group(1) or "")
    except yaml.YAMLError:
        return {}, text
    if not isinstance(data, dict):
        return {}, text
    return data, text[match.end() :]


def first_heading(text: str) -> str | None:
    """The first level-1 ATX heading (`# Title`), ignoring lines inside fenced code blocks."""
    fence: str | None = None
    for line in text.split("\n"):
        opened = FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1) == fence:
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        heading = HEADING.match(line)
        if heading:
            return heading.group(1).strip() or None
    return None


def read_markdown(text: str) -> tuple[str, str | None]:
    """(the text without front matter, the title)."""
    front, body = split_front_matter(text)
    title = front.get("title")
    if not isinstance(title, str) or not title.strip():
        title = first_heading(body)
    return body, title.strip() if title else None
