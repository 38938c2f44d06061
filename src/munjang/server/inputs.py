"""Which request texts count as empty: nothing left once whitespace, control characters (NUL
included) and invisible format characters (zero-width space and joiners, BOM, word joiner) are taken
away. Such a text would embed to a vector of the special tokens alone, which matches nothing."""

from __future__ import annotations

import unicodedata


def is_blank(text: str) -> bool:
    """True when `text` has no visible character."""
    return all(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in text)
