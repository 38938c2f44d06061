"""Split long documents into sentence-aligned chunks that fit an embedding model's window.

An encoder truncates its input silently at its window (512 tokens for e5), so the end of a long
document would never be searchable. A collection therefore embeds a long document as several chunks.
Cutting at sentence boundaries keeps each chunk a run of whole thoughts, which embeds better than text
cut mid-sentence; an optional overlap repeats the last sentences of a chunk at the start of the next,
so that a passage near a boundary keeps some of its context.

- `split_sentences(text)`: sentence spans that tile the text. Paragraphs (blank lines) always end a
  sentence; a paragraph with Hangul is split by Kiwi (which handles Korean endings such as "-다.",
  "-요", and lines wrapped mid-sentence), any other paragraph by punctuation and line breaks.
- `Chunker(count_tokens, max_tokens, overlap_tokens).split(text)`: packs whole sentences greedily
  into `Chunk`s of at most `max_tokens` tokens, counted on each chunk's final text. A sentence longer
  than the budget is split between words, and a word longer than the budget between characters.
- `token_counter(tokenizer)`: `count_tokens` for a Hugging Face tokenizer.

Offsets are character offsets into the document, `chunk.text == text[chunk.start:chunk.end]`; nothing
is stripped, and the whitespace after a sentence belongs to that sentence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Protocol, runtime_checkable

from ..index.tokenizers import contains_hangul, shared_kiwi

CountTokens = Callable[[list[str]], list[int]]

# The end of the whitespace after a blank line: paragraph boundaries, for every language.
_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")
# Generic sentence ends: . ! ? (with closing quotes or brackets) before whitespace; CJK full stops
# with or without whitespace; any line break. A boundary is the end of the match. The lookbehind starts
# a match only at the first of a run of stops, so a long run of dots costs linear time, not quadratic.
_SENTENCE_END = re.compile(r"(?<![.!?])[.!?]+[\"'’”)\]]*\s+|[。！？]+[\"'’”)\]」』]*\s*|\n\s*")
_LAST_LINE_BREAK = re.compile(r"\n\s*")
_WORD = re.compile(r"\S+")
_SPACE = re.compile(r"\s+")
# Kiwi's time grows faster than linearly past a few tens of thousands of characters: longer
# paragraphs go to Kiwi in pieces of at most this many characters, cut at a line break or sentence end.
KIWI_MAX_CHARS = 10_000


@dataclass(frozen=True)
class Chunk:
    """One chunk of a document: `text == document[start:end]`, `index` counts from 0."""

    index: int
    start: int
    end: int
    text: str


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans (start, end) that tile the whole text: consecutive, first starts at 0, last ends at
    len(text); whitespace between sentences belongs to the preceding span. Empty text gives []."""
    if not text:
        return []
    boundaries: set[int] = set()
    korean: list[tuple[int, int]] = []
    for start, end in _paragraphs(text):
        hangul = contains_hangul(text[start:end])
        for piece_start, piece_end in (
            _bounded(text, start, end, KIWI_MAX_CHARS) if hangul else [(start, end)]
        ):
            boundaries.add(piece_start)
            if hangul and contains_hangul(text[piece_start:piece_end]):
                korean.append((piece_start, piece_end))
            else:
                boundaries.update(m.end() for m in _SENTENCE_END.finditer(text, piece_start, piece_end))
    if korean:
        found = shared_kiwi().split_into_sents(iter([text[s:e] for s, e in korean]))
        for (start, end), sentences in zip(korean, found, strict=True):
            boundaries.update(start + s.start for s in sentences if 0 < s.start < end - start)
    return _spans(text, boundaries)


def line_spans(text: str) -> list[tuple[int, int]]:
    """Spans of whole lines that tile the text, each with its line break (and any blank lines after)."""
    cuts = [0, *(m.end() for m in _LAST_LINE_BREAK.finditer(text) if m.end() < len(text)), len(text)]
    return [(a, b) for a, b in pairwise(cuts) if a < b]


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """Spans between blank lines, each with its trailing whitespace."""
    cuts = [0, *(m.end() for m in _PARAGRAPH_BREAK.finditer(text)), len(text)]
    return [(a, b) for a, b in pairwise(cuts) if a < b]


def _bounded(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    """[start, end) in pieces of at most `limit` characters, cut after the last line break in the second
    half of a window, else after the last sentence end, else after the last space, else anywhere."""
    pieces = []
    while end - start > limit:
        lo, hi = start + limit // 2, start + limit
        cut = hi
        for pattern in (_LAST_LINE_BREAK, _SENTENCE_END, _SPACE):
            ends = [m.end() for m in pattern.finditer(text, lo, hi) if m.end() < hi]
            if ends:
                cut = ends[-1]
                break
        pieces.append((start, cut))
        start = cut
    pieces.append((start, end))
    return pieces


def _spans(text: str, boundaries: set[int]) -> list[tuple[int, int]]:
    """Spans between boundaries, each moved past any whitespace so that it ends the preceding span."""
    lead = len(text) - len(text.lstrip())  # leading whitespace belongs to the first sentence
    cuts = {0}
    for boundary in boundaries:
        space = _SPACE.match(text, boundary)
        if space:
            boundary = space.end()
        if lead < boundary < len(text):
            cuts.add(boundary)
    ordered = [*sorted(cuts), len(text)]
    return list(pairwise(ordered))


class Chunker:
    """Splits texts into `Chunk`s of at most `max_tokens` tokens, at sentence boundaries where it can.

    `count_tokens` maps a batch of texts to their token counts (see `token_counter`). With
    `overlap_tokens`, each chunk after the first starts with the previous chunk's last whole sentences
    whose token counts sum to at most `overlap_tokens` (none if the last sentence alone is larger).
    """

    def __init__(self, count_tokens: CountTokens, max_tokens: int, overlap_tokens: int = 0) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        if isinstance(overlap_tokens, bool) or not isinstance(overlap_tokens, int) or overlap_tokens < 0:
            raise ValueError(f"overlap_tokens must be a non-negative integer, got {overlap_tokens!r}")
        if overlap_tokens >= max_tokens:
            raise ValueError(
                f"overlap_tokens ({overlap_tokens}) must be smaller than max_tokens ({max_tokens})"
            )
        self.count_tokens = count_tokens
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens

    def __repr__(self) -> str:
        return f"Chunker(max_tokens={self.max_tokens}, overlap_tokens={self.overlap_tokens})"

    def split(self, text: str, units: Sequence[tuple[int, int]] | None = None) -> list[Chunk]:
        """The chunks of `text` in order; [] for empty or whitespace-only text, one chunk if it fits.
        `units` (spans that tile the text, e.g. `line_spans`: a table's rows) replace the sentences as
        what is packed whole; a unit over the budget is still cut between words."""
        if not text.strip():
            return []
        if self._count([text])[0] <= self.max_tokens:
            return [Chunk(0, 0, len(text), text)]
        found = list(units) if units is not None else split_sentences(text)
        spans, counts = self._fitted(text, found, self._split_long)
        ranges = self._chunk_ranges(text, spans, counts)
        return [
            Chunk(i, spans[first][0], spans[last][1], text[spans[first][0] : spans[last][1]])
            for i, (first, last) in enumerate(ranges)
        ]

    def _count(self, texts: list[str]) -> list[int]:
        counts = self.count_tokens(texts)
        if len(counts) != len(texts):
            raise ValueError(f"count_tokens returned {len(counts)} counts for {len(texts)} texts")
        return [int(c) for c in counts]

    def _chunk_ranges(
        self, text: str, spans: Sequence[tuple[int, int]], counts: Sequence[int]
    ) -> list[tuple[int, int]]:
        """(first, last) unit indices of each chunk; every unit alone fits the budget."""
        last, _ = self._pack(text, spans, counts, 0)
        ranges = [(0, last)]
        while last < len(spans) - 1:
            first = self._overlap_start(counts, *ranges[-1])
            while True:  # the overlap shrinks until the next unit fits beside it
                new_last, _ = self._pack(text, spans, counts, first)
                if new_last > last:
                    break
                first += 1
            ranges.append((first, new_last))
            last = new_last
        return ranges

    def _overlap_start(self, counts: Sequence[int], first: int, last: int) -> int:
        """The first unit of the chunk after units first..last: last + 1, or earlier for the overlap.

        The overlap never reaches back to `first`, so chunks always start (and end) later than before.
        """
        start, total = last + 1, 0
        while self.overlap_tokens and start - 1 > first and total + counts[start - 1] <= self.overlap_tokens:
            start -= 1
            total += counts[start]
        return start

    def _pack(
        self, text: str, spans: Sequence[tuple[int, int]], counts: Sequence[int], first: int
    ) -> tuple[int, int]:
        """The last unit of the longest run from `first` that fits, and the run's verified count.

        Extends by the sum of per-unit counts (an estimate: a subword tokenizer may count a joined
        text differently), then counts the joined text; backs off one unit at a time while it is over
        the budget, and extends again from the real count while that leaves room for the next unit.
        """
        budget, end = self.max_tokens, len(spans)
        last, known = first, counts[first]  # a unit alone is known to fit
        j, estimate = first, known
        while True:
            while j + 1 < end and estimate + counts[j + 1] <= budget:
                j += 1
                estimate += counts[j]
            if j == last:
                return last, known
            actual = self._count([text[spans[first][0] : spans[j][1]]])[0]
            if actual > budget:
                for back in range(j - 1, last, -1):
                    actual = self._count([text[spans[first][0] : spans[back][1]]])[0]
                    if actual <= budget:
                        return back, actual
                return last, known
            last, known = j, actual
            if j + 1 == end or actual + counts[j + 1] > budget:
                return last, known
            estimate = actual

    def _fitted(
        self,
        text: str,
        units: list[tuple[int, int]],
        split: Callable[[str, int, int], list[tuple[int, int, int]]],
    ) -> tuple[list[tuple[int, int]], list[int]]:
        """`units` (spans of `text`) with their token counts, each over the budget replaced by the
        (start, end, count) pieces `split` cuts it into: every span returned fits on its own."""
        spans: list[tuple[int, int]] = []
        counts: list[int] = []
        for (a, b), count in zip(units, self._count([text[a:b] for a, b in units]), strict=True):
            if count <= self.max_tokens:
                spans.append((a, b))
                counts.append(count)
            else:
                for piece_start, piece_end, piece_count in split(text, a, b):
                    spans.append((piece_start, piece_end))
                    counts.append(piece_count)
        return spans, counts

    def _split_long(self, text: str, start: int, end: int) -> list[tuple[int, int, int]]:
        """A sentence over the budget as (start, end, count) pieces: words packed greedily, and a word
        over the budget cut between characters."""
        cuts = [start, *(m.start() for m in _WORD.finditer(text, start, end) if m.start() > start), end]
        spans, counts = self._fitted(text, list(pairwise(cuts)), self._cut_characters)
        pieces = []
        first = 0
        while first < len(spans):
            last, count = self._pack(text, spans, counts, first)
            pieces.append((spans[first][0], spans[last][1], count))
            first = last + 1
        return pieces

    def _cut_characters(self, text: str, start: int, end: int) -> list[tuple[int, int, int]]:
        """[start, end) as (start, end, count) pieces that each fit: the longest prefix found by doubling
        its length, then bisecting between the last length that fits and the first that does not."""
        budget = self.max_tokens
        pieces = []
        while start < end:
            good, good_count, bad = start, 0, end + 1
            width = budget
            while True:
                probe = min(start + width, end)
                count = self._count([text[start:probe]])[0]
                if count > budget:
                    bad = probe
                    break
                good, good_count = probe, count
                if probe == end:
                    break
                width *= 2
            while bad - good > 1 and bad <= end:
                middle = (good + bad) // 2
                count = self._count([text[start:middle]])[0]
                if count <= budget:
                    good, good_count = middle, count
                else:
                    bad = middle
            if good < end and text[good:end].isspace():  # trailing whitespace joins the last piece
                count = self._count([text[start:end]])[0]
                if count <= budget:
                    good, good_count = end, count
            if good == start:
                raise ValueError(
                    f"max_tokens={budget} is smaller than one character's tokens ({text[start]!r} at {start})"
                )
            pieces.append((start, good, good_count))
            start = good
        return pieces


@runtime_checkable
class WrapsFastTokenizer(Protocol):
    """A transformers fast tokenizer: a `tokenizers.Tokenizer` inside (`backend_tokenizer`)."""

    @property
    def backend_tokenizer(self) -> Any: ...


def token_counter(tokenizer: Any) -> CountTokens:
    """count_tokens for a Hugging Face tokenizer (transformers PreTrainedTokenizerFast or a
    `tokenizers.Tokenizer`): token counts without special tokens, batched.

    A fast tokenizer is copied once with truncation and padding off (about a second for a 250k-token
    vocabulary: make one counter per tokenizer), so that a truncating encode elsewhere, which changes
    the shared tokenizer's state, never makes a count come out short.
    """
    from tokenizers import Tokenizer

    backend = tokenizer if isinstance(tokenizer, Tokenizer) else None
    if isinstance(tokenizer, WrapsFastTokenizer):
        backend = tokenizer.backend_tokenizer
    if backend is not None:
        plain = Tokenizer.from_str(backend.to_str())
        plain.no_truncation()
        plain.no_padding()

        def count_fast(texts: list[str]) -> list[int]:
            return [len(encoding.ids) for encoding in plain.encode_batch(texts, add_special_tokens=False)]

        return count_fast
    if callable(tokenizer):

        def count_slow(texts: list[str]) -> list[int]:
            ids = tokenizer(texts, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
            return [len(i) for i in ids]

        return count_slow
    raise TypeError(f"expected a Hugging Face tokenizer, got {type(tokenizer).__name__}")
