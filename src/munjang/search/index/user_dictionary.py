"""A user dictionary for Korean analysis: words the analyser must keep whole (product names, laws,
jargon) with their part of speech, an optional score and optional parts.

Kiwi splits "카카오뱅크" into 카카오 + 뱅크 and "전세사기피해자법" into four nouns, so a query for the
term also matches its fragments everywhere. A user word makes it one token (Kiwi `add_user_word`).

Files load in the format Korean search teams already keep: Elasticsearch/Lucene nori's
`user_dictionary` lines ("word" or "word part part ...", `#` comments), and munjang's own tab-separated
"word<TAB>TAG<TAB>score" lines. A malformed line is reported with its number and nothing is loaded.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .rule_lines import parse_lines

# The Sejong tags a user word may carry: nouns, verbs, adjectives, roots (Kiwi's add_user_word).
USER_WORD_TAGS = ("NNG", "NNP", "NNB", "NR", "NP", "VV", "VA", "XR", "MAG", "SL")
# Bounds on one dictionary: its words and a word's length (each word costs Kiwi a model entry).
MAX_USER_WORDS = 100_000
MAX_WORD_CHARS = 64


@dataclass(frozen=True)
class UserWord:
    """One dictionary entry: `word` (kept whole), its part of speech `tag`, Kiwi's `score` (higher
    prefers the word over other analyses; 0 is Kiwi's default) and `parts`, what the word is made of
    (nori's decompounding: used by the "split" and "both" compound modes; empty: as analysed without
    the dictionary)."""

    word: str
    tag: str = "NNP"
    score: float = 0.0
    parts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        word = unicodedata.normalize("NFKC", self.word).strip() if isinstance(self.word, str) else None
        if not word or any(c.isspace() for c in word):
            raise ValueError(f"a user word is one non-empty word without spaces, not {self.word!r}")
        if len(word) > MAX_WORD_CHARS:
            raise ValueError(f"user word {word[:20]!r}... is over {MAX_WORD_CHARS} characters")
        if self.tag not in USER_WORD_TAGS:
            raise ValueError(f"user word tag must be one of {', '.join(USER_WORD_TAGS)}, not {self.tag!r}")
        if (
            isinstance(self.score, bool)
            or not isinstance(self.score, (int, float))
            or not math.isfinite(self.score)
        ):
            raise ValueError(f"user word score must be a finite number, not {self.score!r}")
        parts = tuple(unicodedata.normalize("NFKC", p).strip() for p in self.parts)
        if any(not p or any(c.isspace() for c in p) for p in parts):
            raise ValueError(f"the parts of {word!r} must be words without spaces, not {list(self.parts)}")
        object.__setattr__(self, "word", word)
        object.__setattr__(self, "score", float(self.score))
        object.__setattr__(self, "parts", parts)

    def to_config(self) -> dict[str, Any]:
        """JSON form; defaults left out."""
        out: dict[str, Any] = {"word": self.word, "tag": self.tag}
        if self.score:
            out["score"] = self.score
        if self.parts:
            out["parts"] = list(self.parts)
        return out

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> UserWord:
        """Rebuild from `to_config`."""
        return cls(
            config["word"], config.get("tag", "NNP"), config.get("score", 0.0), tuple(config.get("parts", ()))
        )


def parse_user_dictionary(lines: Iterable[str], source: str = "dictionary") -> list[UserWord]:
    """The words of a dictionary file's lines: nori's "word [part ...]" (space-separated) or
    "word<TAB>TAG[<TAB>score]". Blank lines and `#` comments are skipped. Every malformed line is
    reported (`DataFormatError` naming `source` and the line numbers); nothing is returned half-way."""
    return parse_lines(lines, _uncommented, _parse_line, source=source, limit=MAX_USER_WORDS, unit="words")


def _uncommented(raw: str) -> str:
    return raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""


def _parse_line(line: str) -> UserWord:
    if "\t" in line:
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) > 3:
            raise ValueError(f"expected word<TAB>TAG[<TAB>score], got {len(fields)} fields")
        tag = fields[1] if len(fields) > 1 and fields[1] else "NNP"
        try:
            score = float(fields[2]) if len(fields) > 2 and fields[2] else 0.0
        except ValueError:
            raise ValueError(f"score {fields[2]!r} is not a number") from None
        return UserWord(fields[0], tag, score)
    word, *parts = line.split()
    if parts and "".join(parts) != unicodedata.normalize("NFKC", word):
        raise ValueError(f"the parts {' '.join(parts)!r} do not spell {word!r} (nori's rule)")
    return UserWord(word, "NNP", 0.0, tuple(parts))
