"""Which request texts count as empty: nothing left once whitespace, control characters (NUL
included) and invisible format characters (zero-width space and joiners, BOM, word joiner) are taken
away. Such a text would embed to a vector of the special tokens alone, which matches nothing. Also
the check every list of request texts gets: not empty, and not over the per-request limit."""

from __future__ import annotations

import unicodedata
from collections.abc import Sized

from .errors import APIError


def is_blank(text: str) -> bool:
    """True when `text` has no visible character."""
    return all(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in text)


def check_count(items: Sized, param: str, limit: int) -> None:
    """400 naming `param` when `items` is empty or holds more than `limit` items."""
    if not items:
        raise APIError(400, f"'{param}' must not be empty", param, "empty_input")
    if len(items) > limit:
        raise APIError(
            400, f"'{param}' has {len(items)} items, over the limit of {limit}", param, "too_many_inputs"
        )
