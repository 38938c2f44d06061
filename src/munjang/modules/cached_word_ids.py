"""Token ids of texts assembled from the cached ids of their words, for the static tier.

A static model's encoding costs little beyond tokenizing, and tokenizers that split on whitespace
before anything else (WordPiece, SentencePiece's Metaspace) give every word the same ids wherever it
appears. Words recur: 54k Korean and English training sentences hold 423k words, 105k of them
distinct. So each distinct word is tokenized once, and a text's ids are its words' cached ids joined,
several times faster than tokenizing the text again once its words have been seen.

The shortcut must give exactly the tokenizer's ids, so it is checked on the tokenizer itself when
first used: probe texts must come out the same both ways, or every text goes through the tokenizer
(byte-level BPE, for one, marks word starts inside its tokens). Spacing and whitespace characters
that a tokenizer treats otherwise (a trailing space SentencePiece keeps; vertical tab, which XLM-R's
normalizer deletes instead of splitting on) are probed the same way, and a text holding one goes
through the tokenizer, as does a text with a word the normalizer empties or cuts at its truncation.

New words are tokenized many to a call, joined by spaces, and each token is given to its word. A
SentencePiece tokenizer marks every word's first token (its "▁" prefix), so there the ids alone say
where each word starts, checked per call by counting the marks; other tokenizers go by offsets.
"""

from __future__ import annotations

import json
import re
import threading
from collections import ChainMap
from collections.abc import Sequence
from itertools import chain, pairwise
from typing import Any

import numpy as np

# Distinct words kept (about 160 bytes each, 80 MB when full); past it, new words are tokenized each time.
DEFAULT_MAX_WORDS = 2**19

# New words tokenized per tokenizer call (joined by spaces), fewer where the tokenizer truncates short.
WORDS_PER_CALL = 64

# Texts the shortcut must reproduce before it is used: scripts, punctuation, digits, single spaces.
PROBES = (
    "a b",
    "query: 안녕하세요, 세계! 오늘 날씨가 좋네요.",
    "탈세 혐의로 기소된 그는 2023년 3월 14일, 서울중앙지법에 출석했다.",
    "Don't stop — now... (really?) [yes] {ok} 3.14% of $1,234.56",
    "日本語のテキスト 中文文本 emoji 😀👍🏽 ﬁ ① ㈜ ½",
    "e\u0301 \u0301 combining",
    "line\nbreak\ttab\rand\u00a0nbsp\u3000ideographic",
)

# Where a tokenizer may treat spacing otherwise (SentencePiece keeps a trailing "▁", or one for each
# space of a run): (what a text must not contain for the shortcut, a probe). Each probe that comes out
# differently sends the texts matching its pattern through the tokenizer.
SPACING_PROBES = ((r"^\s", " a b"), (r"\s$", "a b "), (r"\s\s", "a  b"))


# Printable ASCII and Hangul syllables: a word of these alone needs no look at its normal form where
# the normalizer leaves them as they are (checked once per tokenizer).
PLAIN_WORD = re.compile(r"[!-~\uac00-\ud7a3]+")
PLAIN_CHARACTERS = "".join(map(chr, [*range(0x21, 0x7F), *range(0xAC00, 0xD7A4)]))

# The characters str.split() splits on (str.isspace), each probed against the tokenizer.
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)


class CachedWordIds:
    """`ids(texts)` -> (flat token ids, ids per text), equal to `tokenizer`'s ids without special
    tokens and with its truncation, from per-word ids cached up to `max_words` words."""

    def __init__(self, tokenizer: Any, max_words: int = DEFAULT_MAX_WORDS) -> None:
        self.tokenizer = tokenizer
        self.max_words = max_words
        self._words: dict[str, bytes | None] = {}
        self._lock = threading.Lock()
        self._checked = False
        self.enabled = False
        self._unsafe: re.Pattern[str] | None = None
        self._spacing_sensitive = False
        self._marks: WordStartMarks | None = None
        self._plain: re.Pattern[str] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(
            _words={},
            _checked=False,
            enabled=False,
            _unsafe=None,
            _spacing_sensitive=False,
            _marks=None,
            _plain=None,
        )
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _whole(self, texts: list[str]) -> list[list[int]]:
        encode = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        return [e.ids for e in encode(texts, add_special_tokens=False)]

    def _by_word(self, texts: list[str]) -> list[list[int]]:
        """Ids joined word by word from fresh tokenizer calls (the check's side, no cache)."""
        words = [t.split() for t in texts]
        flat = self._whole([w for ws in words for w in ws])
        out, start = [], 0
        for ws in words:
            out.append([i for ids in flat[start : start + len(ws)] for i in ids])
            start += len(ws)
        return out

    def _check(self) -> None:
        """Use the shortcut only where this tokenizer gives the same ids both ways."""
        with self._lock:
            if self._checked:
                return
            self.enabled = self._whole(list(PROBES)) == self._by_word(list(PROBES))
            cases = [*SPACING_PROBES, *((re.escape(c), f"a{c}b가{c}나") for c in WHITESPACE)]
            probes = [probe for _, probe in cases]
            outcomes = zip(cases, self._whole(probes), self._by_word(probes), strict=True)
            unsafe = [pattern for (pattern, _), whole, by_word in outcomes if whole != by_word]
            self._unsafe = re.compile("|".join(unsafe)) if unsafe else None
            self._spacing_sensitive = any(pattern in unsafe for pattern, _ in SPACING_PROBES)
            self._marks = word_start_marks(self.tokenizer)
            normalizer = self.tokenizer.normalizer
            kept = normalizer is None or normalizer.normalize_str(PLAIN_CHARACTERS) == PLAIN_CHARACTERS
            self._plain = PLAIN_WORD if kept else None
            self._checked = True

    def _tokenize_words(self, missing: list[str]) -> dict[str, bytes | None]:
        """Ids of new words as int32 bytes; None for a word whose ids may depend on its neighbours
        (one the normalizer empties or puts spaces in, for a tokenizer that keeps spacing) or that the
        tokenizer's truncation may have cut.

        Words are tokenized WORDS_PER_CALL at a time, joined by single spaces (the check showed that
        this gives each word's own ids): one tokenizer result per word would cost more than the
        tokenizing itself. Each token then goes to its word by the word-start marks where the
        tokenizer has them (`_split_by_marks`), else by its offsets (`_split_by_offsets`). Words the
        normalizer empties, splits or gives a mark of their own are kept out of the joined calls."""
        fresh: dict[str, bytes | None] = {}
        alone: list[str] = []  # tokenized one by one
        marks = self._marks
        if self._spacing_sensitive or marks is not None:
            odd = self._odd_words(missing)
            for w, why in odd.items():
                if why == "spacing" and self._spacing_sensitive:
                    fresh[w] = None
                else:
                    alone.append(w)
            if odd:
                missing = [w for w in missing if w not in odd]
        truncation = self.tokenizer.truncation
        limit = int(truncation["max_length"]) if truncation else None
        per_call = WORDS_PER_CALL if limit is None else max(1, min(WORDS_PER_CALL, limit // 8))
        chunks = [missing[i : i + per_call] for i in range(0, len(missing), per_call)]
        joined = [" ".join(chunk) for chunk in chunks]
        if marks is not None:  # the ids alone place the words: no offsets needed
            encode = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
            alone += _split_by_marks(chunks, encode(joined, add_special_tokens=False), marks, limit, fresh)
        else:
            encodings = self.tokenizer.encode_batch(joined, add_special_tokens=False)
            alone += _split_by_offsets(chunks, encodings, limit, fresh)
        for w, ids_of_w in zip(alone, self._whole(alone) if alone else [], strict=True):
            cut = limit is not None and len(ids_of_w) >= limit
            fresh[w] = None if cut else np.asarray(ids_of_w, dtype=np.int32).tobytes()
        return fresh

    def _odd_words(self, words: list[str]) -> dict[str, str]:
        """Words whose normal form is empty or holds whitespace ("spacing"), or holds the word-start
        mark ("mark"): each may give a word other than one start and its own tokens. Words of plain
        characters are skipped where the check showed the normalizer leaves those as they are."""
        normalize = self.tokenizer.normalizer.normalize_str if self.tokenizer.normalizer else str
        mark = self._marks.mark if self._marks is not None else None
        plain = self._plain
        odd: dict[str, str] = {}
        for w in words:
            if plain is not None and plain.fullmatch(w):
                continue
            normal = normalize(w)
            if not normal or any(c.isspace() for c in normal):
                odd[w] = "spacing"
            elif mark is not None and mark in normal:
                odd[w] = "mark"
        return odd

    def ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(flat int64 ids of all texts in order, int64 count per text)."""
        if not self._checked:
            self._check()
        texts = list(texts)
        per_text: list[bytes | None] = [None] * len(texts)
        if not self.enabled:
            return _flatten(self._fill(per_text, texts, range(len(texts))))
        unsafe = self._unsafe
        split = [None if unsafe and unsafe.search(t) else t.split() for t in texts]
        words = self._words
        missing = list(set(chain.from_iterable(ws for ws in split if ws is not None)).difference(words))
        fresh = self._tokenize_words(missing) if missing else {}
        room = self.max_words - len(words)
        if len(fresh) <= room:
            words.update(fresh)
            get: Any = words.__getitem__
        else:  # the cache is full: words it cannot hold come from this call's own ids
            if room > 0:
                words.update(dict(list(fresh.items())[:room]))
            get = ChainMap(words, fresh).__getitem__
        truncation = self.tokenizer.truncation
        limit = 4 * int(truncation["max_length"]) if truncation else None  # int32 ids: 4 bytes each
        left = bool(truncation) and str(truncation.get("direction")).lower() == "left"
        direct = []
        for i, ws in enumerate(split):
            if ws is None:
                direct.append(i)
                continue
            try:
                joined = b"".join(map(get, ws))
            except TypeError:  # a word marked None: this text goes through the tokenizer
                direct.append(i)
                continue
            if limit is not None and len(joined) > limit:
                joined = joined[-limit:] if left else joined[:limit]
            per_text[i] = joined
        return _flatten(self._fill(per_text, texts, direct))

    def _fill(
        self, per_text: list[bytes | None], texts: list[str], which: Sequence[int]
    ) -> list[bytes | None]:
        """Put the tokenizer's own ids (with its truncation) for texts `which` into `per_text`."""
        if not which:  # the usual case: no text needs the tokenizer, so no call into it
            return per_text
        for i, ids in zip(which, self._whole([texts[i] for i in which]), strict=True):
            per_text[i] = np.asarray(ids, dtype=np.int32).tobytes()
        return per_text


class WordStartMarks:
    """`marks(ids)`: per token id, whether it begins a word. SentencePiece's Metaspace pre-tokenizer
    (prepending its `mark`, "▁", to every word and splitting there) makes the first token of each word,
    and only that one, start with the mark, for words whose normal form holds no mark of its own. Each
    id is looked up the first time it is seen: e5-small's whole 250k vocabulary at once would add a
    tenth to a static model's first pass over 54k sentences."""

    def __init__(self, tokenizer: Any, mark: str) -> None:
        self.mark = mark
        self._token = tokenizer.id_to_token
        self._known = np.full(tokenizer.get_vocab_size(with_added_tokens=True), -1, dtype=np.int8)

    def __call__(self, ids: np.ndarray) -> np.ndarray:
        known = self._known[ids]
        if np.any(unknown := known < 0):
            for i in np.unique(ids[unknown]).tolist():
                self._known[i] = (self._token(i) or "").startswith(self.mark)
            known = self._known[ids]
        return known.astype(bool)


def word_start_marks(tokenizer: Any) -> WordStartMarks | None:
    """The word-start marks of a tokenizer whose pre-tokenizer is SentencePiece's Metaspace (one, that
    splits and prepends its mark to every word); None for any other."""
    pre_tokenizer = tokenizer.pre_tokenizer
    if pre_tokenizer is None:
        return None
    spec = json.loads(pre_tokenizer.__getstate__())
    parts = spec.get("pretokenizers", [spec]) if spec.get("type") == "Sequence" else [spec]
    metaspace = [p for p in parts if p.get("type") == "Metaspace"]
    if len(metaspace) != 1 or not metaspace[0].get("split", True):
        return None
    if metaspace[0].get("prepend_scheme", "always") != "always":
        return None
    return WordStartMarks(tokenizer, metaspace[0].get("replacement", "\u2581"))


def _split_by_marks(
    chunks: list[list[str]],
    encodings: list[Any],
    marks: WordStartMarks,
    limit: int | None,
    fresh: dict[str, bytes | None],
) -> list[str]:
    """Give each chunk's tokens to its words where every word's tokens begin with the one marked
    token; a chunk whose marks do not number its words (a word the tokenizer gave no marked first
    token, or two), or that the truncation may have cut, returns its words to be tokenized alone."""
    arrays = [np.asarray(e.ids, dtype=np.int32) for e in encodings]
    lengths = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
    flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int32)
    marked = marks(flat)
    firsts = np.cumsum(lengths) - lengths
    sizes = np.fromiter(map(len, chunks), dtype=np.int64, count=len(chunks))
    filled = lengths > 0
    valid = filled & (lengths < (limit if limit is not None else np.iinfo(np.int64).max))
    counts = np.add.reduceat(marked, firsts[filled], dtype=np.int64) if filled.any() else sizes[:0]
    valid[filled] &= (counts == sizes[filled]) & marked[firsts[filled]]
    alone: list[str] = []
    words: list[str] = []
    for chunk, ok in zip(chunks, valid.tolist(), strict=True):
        (words if ok else alone).extend(chunk)
    if words:
        keep = np.repeat(valid, lengths)
        kept = flat[keep]
        bounds = (np.append(np.flatnonzero(marked[keep]), len(kept)) * 4).tolist()
        data = kept.tobytes()
        fresh.update(zip(words, (data[a:b] for a, b in pairwise(bounds)), strict=True))
    return alone


def _split_by_offsets(
    chunks: list[list[str]], encodings: list[Any], limit: int | None, fresh: dict[str, bytes | None]
) -> list[str]:
    """Give each token to the word its character offsets end in; a chunk the truncation may have cut,
    or whose tokens come out of word order, returns its words to be tokenized alone."""
    alone: list[str] = []
    for chunk, encoding in zip(chunks, encodings, strict=True):
        ids = np.asarray(encoding.ids, dtype=np.int32)
        starts = np.cumsum([0] + [len(w) + 1 for w in chunk[:-1]])
        ends = np.fromiter((end for _, end in encoding.offsets), dtype=np.int64, count=len(ids))
        owner = np.searchsorted(starts, ends, side="right") - 1
        if (limit is not None and len(ids) >= limit) or (len(owner) and np.any(np.diff(owner) < 0)):
            alone += chunk
            continue
        bounds = np.searchsorted(owner, np.arange(len(chunk) + 1))
        spans = zip(chunk, bounds[:-1], bounds[1:], strict=True)
        fresh.update((w, ids[a:b].tobytes()) for w, a, b in spans)
    return alone


def _flatten(per_text: Sequence[bytes | None]) -> tuple[np.ndarray, np.ndarray]:
    parts = [p or b"" for p in per_text]
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)) // 4
    return np.frombuffer(b"".join(parts), dtype=np.int32).astype(np.int64), lengths
