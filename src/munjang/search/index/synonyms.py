"""Synonyms for lexical search: equivalence sets ("주담대, 주택담보대출") and one-way rules
("카뱅 => 카카오뱅크"), in the Solr / Elasticsearch synonym-file format teams already keep.

A rule's phrases are analysed like any text, so a phrase is matched as the run of tokens the
analyser makes of it ("주택담보대출" -> 주택 담보 대출), longest first. An equivalence set adds the
other phrases' tokens beside the matched ones; a one-way rule replaces the matched tokens with its
right side (Solr's `=>`). Applied to queries by default (editing synonyms then needs no re-indexing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .rule_lines import parse_lines

# Bounds on one synonym set: its rules and a rule's phrases (each phrase is analysed when loading).
MAX_RULES = 100_000
MAX_PHRASES = 64
MAX_PHRASE_CHARS = 200

# (token, part-of-speech tag, the rule that produced it): what an analyser explains a text as.
Term = tuple[str, str, str]


@dataclass(frozen=True)
class SynonymRule:
    """`terms` are equivalent when `to` is empty; otherwise each of `terms` becomes `to` (one-way)."""

    terms: tuple[str, ...]
    to: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        terms = tuple(_phrase(t) for t in self.terms)
        to = tuple(_phrase(t) for t in self.to)
        if not terms or (not to and len(terms) < 2):
            raise ValueError("a synonym rule needs two equivalent phrases, or phrases => phrases")
        if len(terms) + len(to) > MAX_PHRASES:
            raise ValueError(f"a synonym rule has at most {MAX_PHRASES} phrases")
        object.__setattr__(self, "terms", terms)
        object.__setattr__(self, "to", to)

    def __str__(self) -> str:
        left = ", ".join(self.terms)
        return f"{left} => {', '.join(self.to)}" if self.to else left

    def to_config(self) -> dict[str, Any]:
        """JSON form."""
        return {"terms": list(self.terms), **({"to": list(self.to)} if self.to else {})}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SynonymRule:
        """Rebuild from `to_config`."""
        return cls(tuple(config["terms"]), tuple(config.get("to", ())))

    @classmethod
    def parse(cls, line: str) -> SynonymRule:
        """One Solr line: "a, b, c" or "a, b => c"."""
        if line.count("=>") > 1:
            raise ValueError("more than one '=>'")
        left, arrow, right = line.partition("=>")
        if arrow and not right.strip():
            raise ValueError("nothing after '=>'")
        return cls(_split(left), _split(right) if arrow else ())


def _phrase(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a synonym phrase is non-empty text, not {text!r}")
    if len(text) > MAX_PHRASE_CHARS:
        raise ValueError(f"a synonym phrase is at most {MAX_PHRASE_CHARS} characters")
    return " ".join(text.split())


def _split(side: str) -> tuple[str, ...]:
    parts = [p.strip() for p in side.split(",")]
    if any(not p for p in parts):
        raise ValueError("an empty phrase between commas")
    return tuple(parts)


def parse_synonyms(lines: Iterable[str], source: str = "synonyms") -> list[SynonymRule]:
    """The rules of a Solr / Elasticsearch synonym file. Blank lines and `#` comments are skipped.
    Every malformed line is reported (`DataFormatError` with the line numbers); nothing is returned
    half-way."""
    return parse_lines(lines, _uncommented, SynonymRule.parse, source=source, limit=MAX_RULES, unit="rules")


def _uncommented(raw: str) -> str:
    line = raw.strip()
    return "" if line.startswith("#") else line


class SynonymMap:
    """Rules compiled against an analyser (`analyse`: a phrase to its terms): which token runs
    expand to which terms."""

    def __init__(self, rules: Sequence[SynonymRule], analyse: Callable[[str], list[Term]]) -> None:
        self.targets: dict[tuple[str, ...], list[tuple[list[Term], bool, str]]] = {}
        for rule in rules:
            said = str(rule)
            phrases = {p: analyse(p) for p in (*rule.terms, *rule.to)}
            for phrase in rule.terms:
                key = tuple(t for t, _, _ in phrases[phrase])
                if not key:
                    continue
                others = rule.to if rule.to else [p for p in rule.terms if p != phrase]
                for other in others:
                    found = [(t, tag, f"synonym: {said}") for t, tag, _ in phrases[other]]
                    self.targets.setdefault(key, []).append((found, bool(rule.to), said))
        self.lengths = sorted({len(k) for k in self.targets}, reverse=True)

    def expand(self, terms: list[Term]) -> list[Term]:
        """`terms` with each matched run (longest first) joined or replaced by its synonyms' terms."""
        if not self.targets:
            return terms
        tokens = [t for t, _, _ in terms]
        out: list[Term] = []
        i = 0
        while i < len(terms):
            for n in self.lengths:
                targets = self.targets.get(tuple(tokens[i : i + n])) if i + n <= len(terms) else None
                if targets:
                    break
            else:
                out.append(terms[i])
                i += 1
                continue
            replace = any(replace for _, replace, _ in targets)
            if not replace:
                out.extend(terms[i : i + n])
            seen = set() if replace else set(tokens[i : i + n])
            for found, _, _ in targets:
                for term in found:
                    if term[0] not in seen:
                        seen.add(term[0])
                        out.append(term)
            i += n
        return out
