"""Keyword candidates: Korean noun phrases (Kiwi) and, for other text, word n-grams as KeyBERT makes them.

KeyBERT takes its candidates from scikit-learn's `CountVectorizer`: lowercased runs of two or more word
characters, cut into n-grams. That fails Korean, which glues particles to words: "서울대학교에서" is one
token there, so the candidate "서울대학교" is never seen. Korean documents therefore get candidates
from Kiwi's morphological analysis instead:

- a unit is a noun inside one eojeol (NNG, NNP, NR, SL, SH), with the nouns and noun-derivation
  suffixes (XSN: 들, 적) that follow it in the same eojeol: "학생들이" -> "학생들";
- a run is a sequence of units with nothing but spaces between them ("서울대학교 도서관");
- candidates are the n-grams of units within a run (n in `ngram_range`), each one the span of the
  original text it covers (particles and endings left out), plus, when an adjective or a determiner
  stands right before the run ("새로운 모델", "큰 집", "새 책"), that modifier with the n-gram that
  starts the run.

The language of each document is decided on its own: Korean when Hangul makes up at least
`KOREAN_RATIO` of its letters (`hangul_ratio`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from ..search.index.tokenizers import shared_kiwi

KOREAN_RATIO = 0.3

NOUN_TAGS = frozenset({"NNG", "NNP", "NR", "SL", "SH"})
SUFFIX_TAGS = frozenset({"XSN"})
_ADJECTIVE_STEMS = frozenset({"VA", "XR"})  # 크(다), 조용(하다)
_HANGUL_SYLLABLE = re.compile("[\uac00-\ud7a3]")
_HANGUL_OR_HANJA = re.compile("[\uac00-\ud7a3\u4e00-\u9fff]")
_SPACE = re.compile(r"\s+")


def hangul_ratio(text: str) -> float:
    """The share of a text's letters that are Hangul syllables (0.0 for a text without letters)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for c in letters if _HANGUL_SYLLABLE.match(c)) / len(letters)


def is_korean(text: str, ratio: float = KOREAN_RATIO) -> bool:
    """Whether a document is handled as Korean (Hangul makes up at least `ratio` of its letters)."""
    return hangul_ratio(text) >= ratio


def check_ngram_range(ngram_range: tuple[int, int]) -> tuple[int, int]:
    """`ngram_range` as two integers 1 <= low <= high, or ValueError naming what is wrong."""
    try:
        if isinstance(ngram_range, str) or len(ngram_range) != 2:
            raise ValueError
        low, high = (int(n) for n in ngram_range)
    except (TypeError, ValueError):
        raise ValueError(f"ngram range must be two integers (low, high), not {ngram_range!r}") from None
    if not 1 <= low <= high:
        raise ValueError(f"ngram range must satisfy 1 <= low <= high, not ({low}, {high})")
    return low, high


def _tag(token: Any) -> str:
    return str(token.tag).partition("-")[0]


def _end(token: Any) -> int:
    return int(token.start) + int(token.len)


def _units(tokens: Sequence[Any]) -> list[tuple[int, int, int, int]]:
    """Noun units as (first token, last token, start char, end char): a noun followed, in the same
    eojeol, by more nouns or XSN suffixes."""
    units: list[tuple[int, int, int, int]] = []
    i = 0
    while i < len(tokens):
        if _tag(tokens[i]) not in NOUN_TAGS:
            i += 1
            continue
        j = i
        while (
            j + 1 < len(tokens)
            and _tag(tokens[j + 1]) in NOUN_TAGS | SUFFIX_TAGS
            and int(tokens[j + 1].start) == _end(tokens[j])
        ):
            j += 1
        units.append((i, j, int(tokens[i].start), _end(tokens[j])))
        i = j + 1
    return units


def _modifier_start(tokens: Sequence[Any], first: int, text: str) -> int | None:
    """Start char of the adjective ("새로운", "조용한") or determiner ("새") right before token
    `first`, separated from it by spaces only; None when there is none."""
    k = first - 1
    if (
        k < 0
        or text[_end(tokens[k]) : int(tokens[first].start)].strip()
        or _end(tokens[k]) == int(tokens[first].start)
    ):
        return None
    if _tag(tokens[k]) == "MM":
        return int(tokens[k].start)
    if _tag(tokens[k]) != "ETM":
        return None
    k -= 1
    if k >= 0 and _tag(tokens[k]) in ("XSA",):
        k -= 1
    if k >= 0 and _tag(tokens[k]) in _ADJECTIVE_STEMS:
        return int(tokens[k].start)
    return None


def _keep(phrase: str) -> bool:
    """Drop one-character candidates unless Hangul or hanja (as KeyBERT's `\\w\\w+` drops them)."""
    return len(phrase) > 1 or _HANGUL_OR_HANJA.match(phrase) is not None


def korean_candidates(
    text: str, ngram_range: tuple[int, int] = (1, 2), stop_words: Iterable[str] | None = None
) -> list[str]:
    """Noun-phrase candidates of one Korean text, in order of first appearance, without duplicates.

    `stop_words` (compared lowercased) split runs: a unit that is a stop word is never part of a
    candidate.
    """
    low, high = check_ngram_range(ngram_range)
    text = unicodedata.normalize("NFKC", text)
    if not text.strip():
        return []
    stop = {w.lower() for w in stop_words} if stop_words else set()
    tokens = shared_kiwi().tokenize(text)
    runs: list[list[tuple[int, int, int, int]]] = []
    for unit in _units(tokens):
        if text[unit[2] : unit[3]].lower() in stop:
            runs.append([])
            continue
        previous = runs[-1][-1] if runs and runs[-1] else None
        joined = (
            previous is not None and unit[0] == previous[1] + 1 and not text[previous[3] : unit[2]].strip()
        )
        if joined:
            runs[-1].append(unit)
        else:
            runs.append([unit])
    found: dict[str, None] = {}

    def add(start: int, end: int) -> None:
        phrase = _SPACE.sub(" ", text[start:end]).strip()
        if phrase and _keep(phrase):
            found.setdefault(phrase, None)

    for run in runs:
        if not run:
            continue
        modifier = _modifier_start(tokens, run[0][0], text)
        for i in range(len(run)):
            if modifier is not None and low <= i + 2 <= high:
                add(modifier, run[i][3])
            for n in range(low, high + 1):
                if i + n <= len(run):
                    add(run[i][2], run[i + n - 1][3])
    return list(found)


def word_candidates(
    docs: Sequence[str],
    ngram_range: tuple[int, int] = (1, 2),
    stop_words: str | Sequence[str] | None = "english",
    vocabulary: Sequence[str] | None = None,
) -> list[list[str]]:
    """Word n-gram candidates of each document, as KeyBERT finds them: one `CountVectorizer` fitted on
    all `docs` (or limited to `vocabulary`), each document's candidates in vocabulary order."""
    from sklearn.feature_extraction.text import CountVectorizer

    if not docs:
        return []
    vocab = list(dict.fromkeys(vocabulary)) if vocabulary is not None else None
    vectorizer = CountVectorizer(
        ngram_range=check_ngram_range(ngram_range), stop_words=stop_words, vocabulary=vocab
    )
    try:
        counts = vectorizer.fit(list(docs)).transform(list(docs)).tocsr()  # KeyBERT's order
    except ValueError:  # nothing left after stop words, or no word of two characters
        return [[] for _ in docs]
    words = vectorizer.get_feature_names_out()
    return [[str(words[j]) for j in counts[i].nonzero()[1]] for i in range(len(docs))]


def extract_candidates(
    docs: Sequence[str],
    ngram_range: tuple[int, int] = (1, 2),
    stop_words: str | Sequence[str] | None = "english",
    candidates: Sequence[str] | None = None,
) -> list[list[str]]:
    """Candidates of each document: Kiwi noun phrases for Korean ones, word n-grams for the others.

    With `candidates` (a fixed list, as KeyBERT's argument), a document's candidates are those of
    the list that occur in it: as words for non-Korean documents (KeyBERT's matching), as substrings
    for Korean ones (particles are glued on, so "서울대학교" occurs in "서울대학교에서").
    A string `stop_words` ("english") applies to non-Korean documents; a list applies to both.
    """
    korean = [is_korean(doc) for doc in docs]
    others = [i for i, k in enumerate(korean) if not k]
    out: list[list[str]] = [[] for _ in docs]
    other_candidates = word_candidates([docs[i] for i in others], ngram_range, stop_words, candidates)
    for i, found in zip(others, other_candidates, strict=True):
        out[i] = found
    korean_stop = None if isinstance(stop_words, str) else stop_words
    fixed = list(dict.fromkeys(candidates)) if candidates is not None else None
    for i, doc in enumerate(docs):
        if not korean[i]:
            continue
        if fixed is None:
            out[i] = korean_candidates(doc, ngram_range, korean_stop)
        else:
            folded = unicodedata.normalize("NFKC", doc).lower()
            out[i] = [c for c in fixed if unicodedata.normalize("NFKC", c).lower() in folded]
    return out
