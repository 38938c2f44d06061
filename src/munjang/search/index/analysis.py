"""A collection's lexical analysis settings, the way search teams tune an analyser: a user
dictionary, synonyms, compound handling and typo-tolerant queries, over its tokenizer.

The settings are persisted in the collection's config (key "analysis"; absent means the defaults),
so every backend, process and server analyses alike. The defaults make exactly the tokens the
tokenizer makes without them. What they change:

- `user_words` (`user_dictionary.py`), `compounds` and index-time synonyms change a document's
  tokens: stored passages are analysed again (BM25 only) when they change.
- query-time synonyms (the default `synonyms_at`) and `typos` change only how queries are read:
  an edit applies to the next search.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .synonyms import SynonymMap, SynonymRule, Term
from .tokenizers import COMPOUND_MODES, KIWI_TYPOS, KOREAN_TOKENIZERS, tokenizer_from_config
from .user_dictionary import UserWord

SYNONYMS_AT = ("query", "index")


class AnalysisError(ValueError):
    """A setting the collection's tokenizer cannot honour (a MeCab user dictionary, typos on
    whitespace tokens...)."""


@dataclass(frozen=True)
class AnalysisSettings:
    """What a collection's analysis adds to its tokenizer. `compounds`: "whole", "split" or
    "both" (None: the tokenizer's own, Kiwi "both", MeCab "split"); `typos`: one of Kiwi's typo
    models (`KIWI_TYPOS`) for queries, or None (off: bench/korean_user_dict.py measures it)."""

    user_words: tuple[UserWord, ...] = ()
    synonyms: tuple[SynonymRule, ...] = ()
    synonyms_at: str = "query"
    compounds: str | None = None
    typos: str | None = None

    def __post_init__(self) -> None:
        if self.synonyms_at not in SYNONYMS_AT:
            raise AnalysisError(
                f"synonyms_at must be one of {', '.join(SYNONYMS_AT)}, not {self.synonyms_at!r}"
            )
        if self.compounds is not None and self.compounds not in COMPOUND_MODES:
            raise AnalysisError(
                f"compounds must be one of {', '.join(COMPOUND_MODES)}, not {self.compounds!r}"
            )
        if self.typos is not None and self.typos not in KIWI_TYPOS:
            raise AnalysisError(f"typos must be one of {', '.join(KIWI_TYPOS)} or None, not {self.typos!r}")
        words: dict[str, UserWord] = {}
        for entry in self.user_words:
            words[entry.word] = entry  # a later entry for a word replaces an earlier one
        object.__setattr__(self, "user_words", tuple(words.values()))
        object.__setattr__(self, "synonyms", tuple(dict.fromkeys(self.synonyms)))

    def to_config(self) -> dict[str, Any]:
        """JSON form, the defaults left out (the defaults are {})."""
        out: dict[str, Any] = {}
        if self.user_words:
            out["user_words"] = [entry.to_config() for entry in self.user_words]
        if self.synonyms:
            out["synonyms"] = [rule.to_config() for rule in self.synonyms]
        if self.synonyms_at != "query":
            out["synonyms_at"] = self.synonyms_at
        if self.compounds is not None:
            out["compounds"] = self.compounds
        if self.typos is not None:
            out["typos"] = self.typos
        return out

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> AnalysisSettings:
        """Rebuild from `to_config` (None or {}: the defaults)."""
        config = config or {}
        return cls(
            tuple(UserWord.from_config(entry) for entry in config.get("user_words", ())),
            tuple(SynonymRule.from_config(rule) for rule in config.get("synonyms", ())),
            config.get("synonyms_at", "query"),
            config.get("compounds"),
            config.get("typos"),
        )

    def document_part(self) -> dict[str, Any]:
        """The settings that decide a document's tokens: equal parts, equal stored tokens."""
        out = {k: v for k, v in self.to_config().items() if k in ("user_words", "compounds")}
        if self.synonyms_at == "index":
            out["synonyms"] = [rule.to_config() for rule in self.synonyms]
        return out

    def replace(self, **changes: Any) -> AnalysisSettings:
        """A copy with `changes` (dataclasses.replace, validated)."""
        return dataclasses.replace(self, **changes)


class ExplainingTokenizer(Protocol):
    """A built-in tokenizer: tokens, and the (token, tag, rule) terms behind them."""

    name: str

    def __call__(self, text: str) -> list[str]: ...

    def tokenize_many(self, texts: Sequence[str], show_progress_bar: bool = False) -> list[list[str]]: ...

    def terms(self, text: str) -> list[Term]: ...

    def get_config_dict(self) -> dict[str, Any]: ...


def _side_config(base: Mapping[str, Any], settings: AnalysisSettings, query: bool) -> dict[str, Any]:
    """The tokenizer config `base` with the settings' user words, compounds and (queries) typos."""
    name = base.get("name")
    if name == "auto":
        inner = next((key for key in KOREAN_TOKENIZERS if key in base), "kiwi")
        return {**base, inner: _side_config({"name": inner, **base.get(inner, {})}, settings, query)}
    korean: dict[str, Any] = {}
    if settings.user_words:
        korean["user_words"] = [entry.to_config() for entry in settings.user_words]
    if settings.compounds is not None:
        korean["compounds"] = settings.compounds
    if settings.typos is not None and query:
        korean["typos"] = settings.typos
    if not korean:
        return dict(base)
    if name == "mecab" and ("user_words" in korean or "typos" in korean):
        raise AnalysisError(
            "a user dictionary and typo tolerance need the Kiwi tokenizer: MeCab reads only a compiled "
            "mecab-ko-dic user dictionary (make the collection with tokenizer 'auto' or 'kiwi')"
        )
    if name not in KOREAN_TOKENIZERS:
        raise AnalysisError(f"the {name!r} tokenizer has no Korean analysis to tune (use 'auto' or 'kiwi')")
    return {**base, **korean}


class SynonymTokenizer:
    """A tokenizer whose tokens are expanded by synonym rules (`SynonymMap`)."""

    def __init__(self, inner: ExplainingTokenizer, synonyms: SynonymMap) -> None:
        self.inner, self.synonyms, self.name = inner, synonyms, inner.name

    def __call__(self, text: str) -> list[str]:
        return [token for token, _, _ in self.terms(text)]

    def terms(self, text: str) -> list[Term]:
        return self.synonyms.expand(self.inner.terms(text))

    def tokenize_many(self, texts: Sequence[str], show_progress_bar: bool = False) -> list[list[str]]:
        tokens = self.inner.tokenize_many(texts, show_progress_bar)
        return [[t for t, _, _ in self.synonyms.expand([(t, "", "") for t in each])] for each in tokens]

    def get_config_dict(self) -> dict[str, Any]:
        return self.inner.get_config_dict()


class Analyzer:
    """A collection's analysis: its tokenizer (`tokenizer_config`) with `settings`, one tokenizer
    for documents (what BM25 stores) and one for queries."""

    def __init__(self, tokenizer_config: Mapping[str, Any], settings: AnalysisSettings) -> None:
        self.settings = settings
        plain: Any = tokenizer_from_config(_side_config(tokenizer_config, settings, query=False))
        queries: Any = plain
        if settings.typos is not None:
            queries = tokenizer_from_config(_side_config(tokenizer_config, settings, query=True))
        self.synonyms = SynonymMap(settings.synonyms, plain.terms) if settings.synonyms else None
        self.documents: ExplainingTokenizer = plain
        self.queries: ExplainingTokenizer = queries
        if self.synonyms is not None:
            wrapped = SynonymTokenizer(queries, self.synonyms)
            self.queries = wrapped
            if settings.synonyms_at == "index":
                self.documents = SynonymTokenizer(plain, self.synonyms)

    def explain(self, text: str, query: bool = True) -> list[Term]:
        """(token, tag, rule) of each token `text` makes as a query (or as a document)."""
        return (self.queries if query else self.documents).terms(text)
