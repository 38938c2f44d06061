"""Tokenizers for lexical (BM25) search: Korean morphological analysis and a Unicode word tokenizer.

BM25 matches tokens exactly, so a tokenizer decides what "the same word" means. Korean glues particles
and endings to words ("학교에", "학교를", "갔습니다"), so whitespace or regex splitting almost never lets
a query word match a document word; morphological analysis (Kiwi) recovers the content morphemes
("학교", "가"). Other languages are served well enough by Unicode word splitting.

Three tokenizers, chosen by name with `get_tokenizer`:

- "kiwi": `KiwiTokenizer`, Kiwi (kiwipiepy) morphological analysis, content morphemes only.
- "word": `WordTokenizer`, NFKC-normalised, lowercased runs of Unicode word characters (`\\w+`).
- "auto": `AutoTokenizer`, per text: Kiwi when the text contains any Hangul, the word tokenizer
  otherwise. Kiwi cuts Latin words and numbers inside Korean text the same way the word tokenizer
  does, so a mixed Korean/English corpus shares one vocabulary for them.
"""

from __future__ import annotations

import os
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from tqdm.auto import tqdm

from ..._util.extras import require
from .synonyms import Term
from .user_dictionary import UserWord

TOKENIZER_NAMES = ("auto", "auto-mecab", "kiwi", "mecab", "word")
# The Korean tokenizers an "auto" tokenizer may hold, by name.
KOREAN_TOKENIZERS = ("kiwi", "mecab")

# Kiwi (Sejong-style) tags kept by default, and why:
# - NNG, NNP: common and proper nouns, the core of what a text is about.
# - NR: numeral words (하나, 셋).
# - VV, VA: verb and adjective stems ("만났습니다" -> "만나", "추워서" -> "춥"). Korean predicates carry
#   much of the meaning and queries use them in other inflections; the frequent light verb 하 after
#   a noun is tagged XSV/XSA (dropped) and auxiliaries are VX (dropped), and BM25's idf down-weights
#   the stems that stay common.
# - XR: roots (조용 in 조용하다).
# - SL, SH, SN: foreign (Latin) words, hanja, numbers; cut again with the word regex and lowercased,
#   so "BERT" in a Korean sentence is the same token as "bert" in an English one.
# - W_URL, W_EMAIL, W_HASHTAG, W_MENTION, W_SERIAL: Kiwi's web/serial tokens, cut the same way.
# Dropped: particles (J*), endings (E*), affixes (XP*, XS*), copulas (VCP, VCN), auxiliaries (VX),
# dependent nouns (NNB: 것, 수, 등, 개), pronouns (NP: 나, 그것), determiners (MM), adverbs and
# conjunctive adverbs (MAG, MAJ), interjections (IC), symbols and emoji (S*, W_EMOJI). These are
# function words or near-stopwords; Lucene's Korean analyser (Nori) drops most of them by default too.
DEFAULT_KIWI_TAGS = frozenset(
    {
        "NNG",
        "NNP",
        "NR",
        "VV",
        "VA",
        "XR",
        "SL",
        "SH",
        "SN",
        "W_URL",
        "W_EMAIL",
        "W_HASHTAG",
        "W_MENTION",
        "W_SERIAL",
    }
)
# Tags whose form is not Korean: cut with the word regex so they match the word tokenizer's tokens.
_WORD_LIKE_TAGS = frozenset({"SL", "SH", "SN", "W_URL", "W_EMAIL", "W_HASHTAG", "W_MENTION", "W_SERIAL"})

_WORD = re.compile(r"\w+", re.UNICODE)
# Hangul syllables, conjoining jamo (incl. extended A/B), compatibility jamo and halfwidth Hangul.
_HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uffa0-\uffdc]")
# Everything except compatibility jamo: NFKC would turn ㅋ into a conjoining jamo that Kiwi misreads.
_NOT_COMPAT_JAMO = re.compile("[^\u3130-\u318f]+")


@runtime_checkable
class Tokenizer(Protocol):
    """What `BM25Index` needs from a tokenizer: a name, one text and many texts to token lists."""

    name: str

    def __call__(self, text: str) -> list[str]:
        """The tokens of one text."""
        ...

    def tokenize_many(self, texts: Sequence[str], show_progress_bar: bool = False) -> list[list[str]]:
        """The tokens of each text, in order; implementations may batch or thread for speed."""
        ...

    def get_config_dict(self) -> dict[str, Any]:
        """JSON-serialisable settings, with "name", enough to rebuild the tokenizer when loading."""
        ...


def _check_text(text: object, what: str = "text") -> str:
    if not isinstance(text, str):
        raise TypeError(f"{what} is {type(text).__name__}, not str")
    return text


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("expected a sequence of texts, got a single string; wrap it in a list")
    return [_check_text(text, f"texts[{i}]") for i, text in enumerate(texts)]


def _check_stopwords(stopwords: Iterable[str] | None) -> frozenset[str] | None:
    if stopwords is None:
        return None
    if isinstance(stopwords, str):
        raise TypeError("stopwords must be a collection of words, not a single string")
    words = list(stopwords)
    for word in words:
        _check_text(word, "a stopword")
    return frozenset(_normalize_word(word) for word in words if word)


def _normalize_word(text: str) -> str:
    """Normalise one stopword the way tokens are normalised (NFKC, lowercase)."""
    return unicodedata.normalize("NFKC", text).lower()


def _progress(items: Iterable[Any], total: int, enabled: bool, desc: str) -> Iterator[Any]:
    return iter(tqdm(items, total=total, desc=desc, disable=not enabled))


class WordTokenizer:
    """Unicode word tokenizer: NFKC-normalise, lowercase, keep runs of word characters (`\\w+`).

    Works for any language that separates words with spaces or punctuation; `stopwords` (compared
    after the same normalisation) are dropped.
    """

    name = "word"

    def __init__(self, stopwords: Iterable[str] | None = None) -> None:
        self.stopwords = _check_stopwords(stopwords)

    def __call__(self, text: str) -> list[str]:
        """The lowercased word tokens of `text`, stopwords removed."""
        tokens = _WORD.findall(unicodedata.normalize("NFKC", _check_text(text)).lower())
        if self.stopwords:
            return [token for token in tokens if token not in self.stopwords]
        return tokens

    def terms(self, text: str) -> list[Term]:
        """(token, "WORD", "word") for each token: what `analyze` shows."""
        return [(token, "WORD", "word") for token in self(text)]

    def tokenize_many(self, texts: Sequence[str], show_progress_bar: bool = False) -> list[list[str]]:
        """`self(text)` for each text (pure Python regex: no batching to gain)."""
        checked = _check_texts(texts)
        return [self(text) for text in _progress(checked, len(checked), show_progress_bar, "Tokenizing")]

    def get_config_dict(self) -> dict[str, Any]:
        """Name and stopwords (sorted, or None)."""
        return {"name": self.name, "stopwords": None if self.stopwords is None else sorted(self.stopwords)}

    def __repr__(self) -> str:
        count = 0 if self.stopwords is None else len(self.stopwords)
        return f"WordTokenizer(stopwords={count})"


class ContentMorphemes:
    """Which morphemes a Korean tokenizer keeps (`pos_tags`, Sejong tags; stopwords dropped) and how
    a kept one becomes tokens: NFKC, lowercased, and Latin words, hanja and numbers cut with the word
    regex, so Korean and English texts share one vocabulary for them."""

    def __init__(self, pos_tags: Iterable[str] | None = None, stopwords: Iterable[str] | None = None) -> None:
        if pos_tags is None:
            self.pos_tags = DEFAULT_KIWI_TAGS
        else:
            if isinstance(pos_tags, str):
                raise TypeError("pos_tags must be a collection of tags, e.g. ['NNG', 'NNP']")
            self.pos_tags = frozenset(pos_tags)
            if not self.pos_tags:
                raise ValueError("pos_tags is empty: every morpheme would be dropped")
        self.stopwords = _check_stopwords(stopwords)

    def tokens(self, morphemes: Iterable[tuple[str, str]]) -> list[str]:
        """The tokens of (form, tag) morphemes, in order: `terms` without the tags and rules, kept
        apart because it is the hot path of every write (about 10 % faster without the tuples)."""
        out: list[str] = []
        for form, tag in morphemes:
            if tag not in self.pos_tags:
                continue
            form = unicodedata.normalize("NFKC", form).lower()
            if tag in _WORD_LIKE_TAGS:
                out.extend(_WORD.findall(form))
            elif form:
                out.append(form)
        if self.stopwords:
            return [token for token in out if token not in self.stopwords]
        return out

    def terms(self, morphemes: Iterable[Term]) -> list[Term]:
        """The (token, tag, rule) of the kept (form, tag, rule) morphemes, in order."""
        out: list[Term] = []
        for form, tag, rule in morphemes:
            if tag not in self.pos_tags:
                continue
            form = unicodedata.normalize("NFKC", form).lower()
            if tag in _WORD_LIKE_TAGS:
                out.extend((word, tag, rule) for word in _WORD.findall(form))
            elif form:
                out.append((form, tag, rule))
        if self.stopwords:
            return [term for term in out if term[0] not in self.stopwords]
        return out

    def get_config_dict(self) -> dict[str, Any]:
        """Kept POS tags and stopwords, sorted."""
        return {
            "pos_tags": sorted(self.pos_tags),
            "stopwords": None if self.stopwords is None else sorted(self.stopwords),
        }


_kiwi_lock = threading.Lock()
_kiwi_cache: dict[tuple[int, bool], Any] = {}
# Analysers with a user dictionary, by (process, multi_words, dictionary): the last few only (a
# dictionary edit makes a new one; each holds Kiwi's model, about 100 MB).
_dictionary_kiwis: OrderedDict[tuple[int, bool, int], Any] = OrderedDict()
MAX_DICTIONARY_KIWIS = 3
# How a compound comes out: "split" into its parts (Lucene Nori's default, `discard`), kept "whole",
# or "both" (Nori's `mixed`): a noun compound of mecab-ko-dic ("교육청" = 교육 + 청), a Kiwi user word.
COMPOUND_MODES = ("split", "whole", "both")
# Kiwi's typo models, by name (`Kiwi.tokenize(typos=...)`), for typo-tolerant query analysis.
KIWI_TYPOS = (
    "basic",
    "continual",
    "basic_with_continual",
    "lengthening",
    "basic_with_continual_and_lengthening",
)


def shared_kiwi(multi_words: bool = False) -> Any:
    """The process's Kiwi analyser, created on first use and shared by the Kiwi tokenizers here and
    by `munjang.search.collection.chunking`'s sentence splitter.

    `multi_words` loads Kiwi's multi-word dictionary too, which turns some proper-noun phrases into
    one token ("자연어 처리"). It more than doubles the load (about 2.4 against 1 CPU-second) and
    tokenizes no better (bench/korean_analyzers.py), so only collections tokenized with it before
    (their tokenizer config lacks `multi_words`) ask for it. Keyed by process id too, so a forked
    worker builds its own instead of reusing the parent's threads.
    """
    key = (os.getpid(), multi_words)
    with _kiwi_lock:
        kiwi = _kiwi_cache.get(key)
        if kiwi is None:
            from kiwipiepy import Kiwi

            kiwi = _kiwi_cache[key] = Kiwi(load_multi_dict=multi_words)
        return kiwi


def dictionary_kiwi(multi_words: bool, user_words: tuple[UserWord, ...], digest: int) -> Any:
    """A Kiwi analyser with `user_words` added (each word's `user_value` is its index, so a token
    says which entry made it), shared per process by dictionary (`digest`: the words' hash)."""
    key = (os.getpid(), multi_words, digest)
    with _kiwi_lock:
        kiwi = _dictionary_kiwis.get(key)
        if kiwi is not None:
            _dictionary_kiwis.move_to_end(key)
            return kiwi
    from kiwipiepy import Kiwi

    kiwi = Kiwi(load_multi_dict=multi_words)
    for i, entry in enumerate(user_words):
        kiwi.add_user_word(entry.word, entry.tag, entry.score, user_value=i)
    with _kiwi_lock:
        _dictionary_kiwis[key] = kiwi
        while len(_dictionary_kiwis) > MAX_DICTIONARY_KIWIS:
            _dictionary_kiwis.popitem(last=False)
    return kiwi


def _normalize_for_kiwi(text: str) -> str:
    """NFKC (full-width Latin to ASCII, decomposed Hangul to syllables), leaving compatibility jamo."""
    return _NOT_COMPAT_JAMO.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)


class KiwiTokenizer:
    """Korean tokenizer: Kiwi morphological analysis, keeping content morphemes (`pos_tags`).

    "학교에 갔습니다" -> ["학교", "가"]. Latin words, hanja and numbers in the text are kept and cut
    with the word regex, lowercased ("BERT-2" -> ["bert", "2"]). The Kiwi analyser is shared by every
    KiwiTokenizer in the process and loaded on first use. Tags are matched without Kiwi's
    regular/irregular suffix ("VV-I" counts as "VV"). `multi_words`: Kiwi's multi-word dictionary
    (see `shared_kiwi`); off by default, on for indexes tokenized before it was an option.

    `user_words` (`user_dictionary.py`) come out per `compounds`: "both" (the default: the whole word
    and its parts, so a query for the term ranks its pages first and a query for a part still finds
    them; bench/korean_user_dict.py), "whole" or "split" (only the parts), their parts being the
    entry's own or the word as analysed without the dictionary. `typos` names one of Kiwi's typo
    models (`KIWI_TYPOS`): a typo is read as the word it most likely misspells ("금니" -> 금리); for
    queries. With none of the three, the tokens are exactly those of a tokenizer without them.
    """

    name = "kiwi"

    def __init__(
        self,
        pos_tags: Iterable[str] | None = None,
        stopwords: Iterable[str] | None = None,
        multi_words: bool = False,
        user_words: Iterable[UserWord] = (),
        compounds: str = "both",
        typos: str | None = None,
    ) -> None:
        if compounds not in COMPOUND_MODES:
            raise ValueError(f"compounds must be one of {', '.join(COMPOUND_MODES)}, not {compounds!r}")
        if typos is not None and typos not in KIWI_TYPOS:
            raise ValueError(f"typos must be one of {', '.join(KIWI_TYPOS)} or None, not {typos!r}")
        self.multi_words = bool(multi_words)
        self.user_words = tuple(user_words)
        self.compounds, self.typos = compounds, typos
        self._digest = hash(self.user_words)
        self._parts: dict[int, list[Term]] = {}
        self.content = ContentMorphemes(pos_tags, stopwords)
        self.pos_tags, self.stopwords = self.content.pos_tags, self.content.stopwords

    def _kiwi(self) -> Any:
        if not self.user_words:
            return shared_kiwi(self.multi_words)
        return dictionary_kiwi(self.multi_words, self.user_words, self._digest)

    def _analyse(self, text: str | Iterator[str]) -> Any:
        if self.typos is None:
            return self._kiwi().tokenize(text)
        return self._kiwi().tokenize(text, typos=self.typos)

    def _morphemes(self, tokens: Iterable[Any]) -> Iterator[Term]:
        """(form, tag, rule) of each morpheme; Kiwi's tags carry a regular/irregular suffix
        ("VV-I"), matched without it."""
        for token in tokens:
            tag = token.tag.partition("-")[0]
            index = token.user_value if self.user_words else None
            if not isinstance(index, int):
                yield token.form, tag, "typo" if self.typos and token.typo_cost else "morpheme"
                continue
            if self.compounds != "split":
                yield token.form, tag, "user word"
            if self.compounds != "whole":
                yield from self._parts_of(index)

    def _parts_of(self, index: int) -> list[Term]:
        """A user word's parts: the entry's own, or the word analysed without the dictionary."""
        parts = self._parts.get(index)
        if parts is None:
            entry = self.user_words[index]
            tokens = shared_kiwi(self.multi_words).tokenize(" ".join(entry.parts or (entry.word,)))
            parts = self._parts[index] = [(t.form, t.tag.partition("-")[0], "compound part") for t in tokens]
        return parts

    def _keep(self, tokens: Iterable[Any]) -> list[str]:
        if not self.user_words:  # the plain path, as fast as before user words existed
            return self.content.tokens((token.form, token.tag.partition("-")[0]) for token in tokens)
        return [token for token, _, _ in self.content.terms(self._morphemes(tokens))]

    def __call__(self, text: str) -> list[str]:
        """The content morphemes of `text`, lowercased."""
        text = _normalize_for_kiwi(_check_text(text))
        if not text.strip():
            return []
        return self._keep(self._analyse(text))

    def terms(self, text: str) -> list[Term]:
        """(token, tag, rule) of each kept morpheme: what `analyze` shows."""
        text = _normalize_for_kiwi(_check_text(text))
        return self.content.terms(self._morphemes(self._analyse(text))) if text.strip() else []

    def tokenize_many(self, texts: Sequence[str], show_progress_bar: bool = False) -> list[list[str]]:
        """Content morphemes of each text; Kiwi analyses the batch with its own worker threads."""
        checked = [_normalize_for_kiwi(text) for text in _check_texts(texts)]
        if not checked:
            return []
        analysed = self._analyse(iter(checked))
        return [self._keep(tokens) for tokens in _progress(analysed, len(checked), show_progress_bar, "Kiwi")]

    def get_config_dict(self) -> dict[str, Any]:
        """Name, kept POS tags, stopwords and the dictionary choice; the user words, compound mode
        and typo model only when set (a default config reads as it did before they existed)."""
        config = {"name": self.name, **self.content.get_config_dict(), "multi_words": self.multi_words}
        if self.user_words:
            config["user_words"] = [entry.to_config() for entry in self.user_words]
        if self.compounds != "both":
            config["compounds"] = self.compounds
        if self.typos is not None:
            config["typos"] = self.typos
        return config

    def __repr__(self) -> str:
        return f"KiwiTokenizer(pos_tags={sorted(self.pos_tags)}, multi_words={self.multi_words})"


_mecab_lock = threading.Lock()
_mecab_cache: dict[int, Any] = {}


def shared_mecab() -> Any:
    """The process's MeCab tagger over mecab-ko-dic (python-mecab-ko), made on first use. The
    dictionary is a mapped file, so making one costs milliseconds, not Kiwi's seconds."""
    key = os.getpid()
    with _mecab_lock:
        tagger = _mecab_cache.get(key)
        if tagger is None:
            mecab = require("mecab")
            tagger = _mecab_cache[key] = mecab.MeCab()
        return tagger


class MecabTokenizer:
    """Korean tokenizer: MeCab over mecab-ko-dic (the dictionary of Lucene's Nori analyser), keeping
    content morphemes (`pos_tags`, the same Sejong tags as `KiwiTokenizer`'s defaults).

    An inflected word is cut into its morphemes by the dictionary's analysis ("갔" = 가/VV + 았/EP ->
    ["가"]); a compound noun per `compounds`. Latin words, hanja and numbers are lowercased and cut
    with the word regex, as in `KiwiTokenizer`, so both share one vocabulary for them.
    """

    name = "mecab"

    def __init__(
        self,
        pos_tags: Iterable[str] | None = None,
        stopwords: Iterable[str] | None = None,
        compounds: str = "split",
    ) -> None:
        if compounds not in COMPOUND_MODES:
            raise ValueError(f"compounds must be one of {', '.join(COMPOUND_MODES)}, not {compounds!r}")
        self.compounds = compounds
        self.content = ContentMorphemes(pos_tags, stopwords)
        self.pos_tags, self.stopwords = self.content.pos_tags, self.content.stopwords

    def _keep(self, morphemes: Iterable[Any]) -> list[str]:
        return self.content.tokens((form, tag) for form, tag, _ in self._analysed(morphemes))

    def _analysed(self, morphemes: Iterable[Any]) -> Iterator[Term]:
        """(form, tag, rule) of each morpheme, an inflected word or a compound as the dictionary
        cuts it ("갔" -> 가/VV, 았/EP; a compound per `compounds`)."""
        for morpheme in morphemes:
            feature = morpheme.feature
            parts = feature.expression.split("+") if feature.expression else []
            compound = feature.type == "Compound"
            if not parts or (compound and self.compounds != "split"):
                yield morpheme.surface, feature.pos.partition("+")[0], "compound" if compound else "morpheme"
            if parts and not (compound and self.compounds == "whole"):
                for part in parts:  # "form/TAG/semantic"
                    form, _, rest = part.partition("/")
                    yield form, rest.partition("/")[0], "compound part" if compound else "morpheme"

    def terms(self, text: str) -> list[Term]:
        """(token, tag, rule) of each kept morpheme: what `analyze` shows."""
        text = _normalize_for_kiwi(_check_text(text))
        return self.content.terms(self._analysed(shared_mecab().parse(text))) if text.strip() else []

    def __call__(self, text: str) -> list[str]:
        """The content morphemes of `text`, lowercased."""
        text = _normalize_for_kiwi(_check_text(text))
        if not text.strip():
            return []
        return self._keep(shared_mecab().parse(text))

    def tokenize_many(self, texts: Sequence[str], show_progress_bar: bool = False) -> list[list[str]]:
        """`self(text)` for each text (MeCab analyses one text at a time, quickly)."""
        checked = _check_texts(texts)
        return [self(text) for text in _progress(checked, len(checked), show_progress_bar, "MeCab")]

    def get_config_dict(self) -> dict[str, Any]:
        """Name, kept POS tags, stopwords and the compound mode."""
        return {"name": self.name, **self.content.get_config_dict(), "compounds": self.compounds}

    def __repr__(self) -> str:
        return f"MecabTokenizer(pos_tags={sorted(self.pos_tags)}, compounds={self.compounds!r})"


def contains_hangul(text: str) -> bool:
    """Whether `text` has any Hangul character (syllable or jamo, any Unicode block)."""
    return _HANGUL.search(text) is not None


class AutoTokenizer:
    """Per-text choice: the Korean tokenizer (`korean`) for texts containing any Hangul, `word` for
    all others.

    The decision is made for each text on its own (documents and queries alike), so a corpus mixing
    Korean and other languages works; an English word inside a Korean text comes out of the Korean
    tokenizer lowercased, matching the word tokenizer's token for the same word in an English text.
    """

    name = "auto"

    def __init__(
        self, korean: KiwiTokenizer | MecabTokenizer | None = None, word: WordTokenizer | None = None
    ) -> None:
        if korean is not None and not isinstance(korean, (KiwiTokenizer, MecabTokenizer)):
            raise TypeError(f"korean must be a KiwiTokenizer or MecabTokenizer, not {type(korean).__name__}")
        self.korean = korean if korean is not None else KiwiTokenizer()
        self.word = word if word is not None else WordTokenizer()

    def __call__(self, text: str) -> list[str]:
        """Korean tokens if `text` contains Hangul, word tokens otherwise."""
        if contains_hangul(_check_text(text)):
            return self.korean(text)
        return self.word(text)

    def terms(self, text: str) -> list[Term]:
        """The Korean or the word tokenizer's terms, chosen as `__call__` chooses."""
        if contains_hangul(_check_text(text)):
            return self.korean.terms(text)
        return self.word.terms(text)

    def tokenize_many(self, texts: Sequence[str], show_progress_bar: bool = False) -> list[list[str]]:
        """Hangul texts go to the Korean tokenizer in one batch, the rest to the word tokenizer;
        order is kept."""
        checked = _check_texts(texts)
        korean = [i for i, text in enumerate(checked) if contains_hangul(text)]
        out: list[list[str]] = [[] for _ in checked]
        korean_tokens = self.korean.tokenize_many([checked[i] for i in korean], show_progress_bar)
        for i, tokens in zip(korean, korean_tokens, strict=True):
            out[i] = tokens
        korean_set = set(korean)
        for i, text in enumerate(checked):
            if i not in korean_set:
                out[i] = self.word(text)
        return out

    def get_config_dict(self) -> dict[str, Any]:
        """Name and the settings of both inner tokenizers (the Korean one under its own name, so a
        config saved before the choice reads back as Kiwi)."""
        inner = self.korean.get_config_dict()
        return {"name": self.name, inner["name"]: inner, "word": self.word.get_config_dict()}

    def __repr__(self) -> str:
        return f"AutoTokenizer(korean={self.korean!r}, word={self.word!r})"


def get_tokenizer(name: str) -> Tokenizer:
    """A tokenizer with default settings by name: "auto" (Kiwi for Hangul), "auto-mecab" (MeCab for
    Hangul), "kiwi", "mecab" or "word"."""
    if name == "kiwi":
        return KiwiTokenizer()
    if name == "mecab":
        return MecabTokenizer()
    if name == "word":
        return WordTokenizer()
    if name == "auto":
        return AutoTokenizer()
    if name == "auto-mecab":
        return AutoTokenizer(korean=MecabTokenizer())
    raise ValueError(f"unknown tokenizer {name!r}; valid names: {', '.join(TOKENIZER_NAMES)}")


def tokenizer_from_config(config: Mapping[str, Any]) -> Tokenizer:
    """Rebuild a tokenizer from its `get_config_dict()` (how a saved index restores its tokenizer)."""
    name = config.get("name")
    if name == "word":
        return WordTokenizer(stopwords=config.get("stopwords"))
    if name == "kiwi":
        # A config saved before `multi_words` existed was tokenized with the multi-word dictionary.
        return KiwiTokenizer(
            pos_tags=config.get("pos_tags"),
            stopwords=config.get("stopwords"),
            multi_words=bool(config.get("multi_words", True)),
            user_words=[UserWord.from_config(entry) for entry in config.get("user_words", ())],
            compounds=config.get("compounds", "both"),
            typos=config.get("typos"),
        )
    if name == "mecab":
        return MecabTokenizer(
            pos_tags=config.get("pos_tags"),
            stopwords=config.get("stopwords"),
            compounds=config.get("compounds", "split"),
        )
    if name == "auto":
        inner = [key for key in KOREAN_TOKENIZERS if key in config]
        if len(inner) > 1:
            raise ValueError(f"an 'auto' tokenizer config names two Korean tokenizers: {inner}")
        key = inner[0] if inner else "kiwi"  # saved before the choice: Kiwi
        korean = tokenizer_from_config({"name": key, **config.get(key, {})})
        word = tokenizer_from_config(config.get("word", {"name": "word"}))
        if not isinstance(korean, (KiwiTokenizer, MecabTokenizer)) or not isinstance(word, WordTokenizer):
            raise ValueError("an 'auto' tokenizer config holds a Korean and a 'word' tokenizer config")
        return AutoTokenizer(korean=korean, word=word)
    raise ValueError(
        f"cannot rebuild tokenizer {name!r} from its config; built-in names: {', '.join(TOKENIZER_NAMES)}"
    )
