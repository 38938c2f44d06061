"""BM25 that grows with what is added: postings in segments, scores computed at query time.

bm25s precomputes every (term, document) score, which depend on the corpus size, the mean length
and each term's document frequency: any add changes them all, so it can only rebuild. Here the
index keeps what does not change, each text's term frequencies (postings) and its length, and
computes a query's scores from the current statistics, with the same formulas as bm25s (see
`bm25.py`; the methods whose documents without a query term score zero: lucene, robertson,
atire). An add costs what it adds; a delete marks texts dead and updates two counters.

Postings live in immutable segments, each sorted by term and holding its own term table (no
vocabulary is shared between segments, so a segment saved to a file is whole and is mapped as it
is): an add appends one, and segments of similar size are merged (like a binary counter), so a
query reads O(log n) of them and merging costs O(log n) per posting over the index's life. Dead
texts' postings are dropped when merged. A term's document frequency is counted at query time over
its live postings, which the query reads anyway, so deletes never rewrite postings.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

METHODS = ("lucene", "robertson", "atire")


class TermTable:
    """A segment's terms, sorted by their UTF-8 bytes: `blob[offsets[i]:offsets[i + 1]]` is term i.
    Held as two arrays (not a dict), so a table mapped from a file costs nothing to open; a term is
    found by binary search."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self.blob, self.offsets = blob, offsets

    @staticmethod
    def of(terms: Sequence[bytes]) -> TermTable:
        """A table of `terms`, already sorted and unique."""
        offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum([len(t) for t in terms], out=offsets[1:])
        return TermTable(np.frombuffer(b"".join(terms), dtype=np.uint8), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> bytes:
        return bytes(self.blob[self.offsets[i] : self.offsets[i + 1]])

    def find(self, term: bytes) -> int:
        """The term's position, or -1."""
        i = bisect.bisect_left(self, term)
        return i if i < len(self) and self[i] == term else -1

    def terms(self) -> list[bytes]:
        data, offsets = self.blob.tobytes(), self.offsets.tolist()
        return [data[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]

    def subset(self, rows: np.ndarray) -> TermTable:
        """The terms at positions `rows` (ascending), as a table."""
        lengths = np.diff(self.offsets)[rows]
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        gather = np.repeat(self.offsets[:-1][rows] - offsets[:-1], lengths) + np.arange(offsets[-1])
        return TermTable(np.asarray(self.blob)[gather], offsets)


@dataclass(frozen=True)
class Segment:
    """Postings of the texts `first:end` (text numbers), sorted by term: for term `terms[i]` the
    texts `texts[ptr[i]:ptr[i + 1]]` with their term frequencies `tfs[...]`. `file`: where it is
    saved (None: not yet), for an index kept on disk (`search/followers/lexical_files.py`)."""

    terms: TermTable
    ptr: np.ndarray
    texts: np.ndarray
    tfs: np.ndarray
    first: int = 0
    end: int = 0
    file: str | None = None

    @property
    def size(self) -> int:
        return len(self.texts)

    @staticmethod
    def build(
        table: TermTable, term_ids: np.ndarray, text_ids: np.ndarray, tfs: np.ndarray, first: int, end: int
    ) -> Segment:
        """A segment from unordered postings (term position in `table`, text, tf), each (term,
        text) once; terms of `table` without postings are dropped."""
        order = np.lexsort((text_ids, term_ids))
        terms_sorted = term_ids[order]
        unique, starts = np.unique(terms_sorted, return_index=True)
        ptr = np.append(starts, len(terms_sorted)).astype(np.int64)
        present = table if len(unique) == len(table) else table.subset(unique)
        return Segment(
            present, ptr, text_ids[order].astype(np.int64), tfs[order].astype(np.float32), first, end
        )

    @staticmethod
    def of_texts(documents: Sequence[Sequence[str]], first: int) -> Segment:
        """The segment of token lists numbered `first`, `first + 1`, ..."""
        vocab: dict[str, int] = {}
        terms: list[int] = []
        texts: list[int] = []
        tfs: list[int] = []
        for i, tokens in enumerate(documents):
            for token, tf in Counter(tokens).items():
                term = vocab.get(token)
                if term is None:
                    term = vocab[token] = len(vocab)
                terms.append(term)
                texts.append(first + i)
                tfs.append(tf)
        encoded = [t.encode("utf-8") for t in vocab]
        order = sorted(range(len(encoded)), key=encoded.__getitem__)
        rank = np.zeros(len(encoded), dtype=np.int64)
        rank[order] = np.arange(len(encoded))
        return Segment.build(
            TermTable.of([encoded[i] for i in order]),
            rank[np.asarray(terms, dtype=np.int64)],
            np.asarray(texts, dtype=np.int64),
            np.asarray(tfs, dtype=np.float32),
            first,
            first + len(documents),
        )

    def postings(self, term: bytes) -> tuple[np.ndarray, np.ndarray]:
        i = self.terms.find(term)
        if i < 0:
            return _EMPTY_INT, _EMPTY_FLOAT
        return self.texts[self.ptr[i] : self.ptr[i + 1]], self.tfs[self.ptr[i] : self.ptr[i + 1]]

    def merged(self, other: Segment, alive: np.ndarray) -> Segment:
        """This segment and the next one (`other`) as one, without the postings of dead texts."""
        mine, theirs = self.terms.terms(), other.terms.terms()
        union = sorted(set(mine).union(theirs))
        position = {t: i for i, t in enumerate(union)}
        terms = np.concatenate(
            [
                np.repeat(np.asarray([position[t] for t in own], dtype=np.int64), np.diff(s.ptr))
                for s, own in ((self, mine), (other, theirs))
            ]
        )
        texts = np.concatenate([self.texts, other.texts])
        tfs = np.concatenate([self.tfs, other.tfs])
        keep = alive[texts]
        return Segment.build(TermTable.of(union), terms[keep], texts[keep], tfs[keep], self.first, other.end)


_EMPTY_INT = np.zeros(0, dtype=np.int64)
_EMPTY_FLOAT = np.zeros(0, dtype=np.float32)


class IncrementalBM25:
    """BM25 over texts numbered 0, 1, ... in the order they are added (see the module docstring).

    `add(token_lists)` appends texts; `kill(texts)` removes them; `search(tokens, k, allowed)` gives
    the best live texts containing a query token, best first, ties by lower text number, with the
    scores bm25s would give the live texts alone."""

    def __init__(self, k1: float = 1.5, b: float = 0.75, method: str = "lucene") -> None:
        if method not in METHODS:
            raise ValueError(f"incremental BM25 supports {', '.join(METHODS)}, not {method!r}")
        self.k1, self.b, self.method = float(k1), float(b), method
        self.segments: list[Segment] = []
        self._lengths = np.zeros(0, dtype=np.float32)
        self._alive = np.zeros(0, dtype=bool)
        self.count = 0  # texts added, dead ones included
        self.live = 0
        self.total_length = 0.0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """Live texts."""
        return self.live

    @property
    def alive(self) -> np.ndarray:
        return self._alive[: self.count]

    def add(self, documents: Sequence[Sequence[str]]) -> None:
        """Append texts (token lists) as the next text numbers."""
        if not documents:
            return
        lengths = np.asarray([len(tokens) for tokens in documents], dtype=np.float32)
        segment = Segment.of_texts(documents, self.count)
        with self._lock:
            self._grow(len(documents))
            start, end = self.count, self.count + len(documents)
            self._lengths[start:end] = lengths
            self._alive[start:end] = True
            self.count, self.live = end, self.live + len(documents)
            self.total_length += float(lengths.sum())
            self.segments = self._compacted([*self.segments, segment])

    @classmethod
    def restored(
        cls, segments: list[Segment], lengths: np.ndarray, alive: np.ndarray, **options: Any
    ) -> IncrementalBM25:
        """An index in the state saved as these segments (covering texts 0 to len(lengths), in
        order), text lengths and live flags."""
        index = cls(**options)
        index._grow(len(lengths))
        index._lengths[: len(lengths)] = lengths
        index._alive[: len(alive)] = alive
        index.count, index.live = len(lengths), int(np.count_nonzero(alive))
        index.total_length = float(np.sum(lengths[alive], dtype=np.float64))
        index.segments = list(segments)
        return index

    def state(self) -> tuple[list[Segment], np.ndarray, np.ndarray]:
        """(segments, text lengths, live flags) as they are now, for saving."""
        with self._lock:
            count = self.count
            return list(self.segments), self._lengths[:count].copy(), self._alive[:count].copy()

    def replace_segments(self, saved: dict[tuple[int, int], Segment]) -> None:
        """Swap segments for their saved (mapped) equals, found by text range; any merged meanwhile stay."""
        with self._lock:
            self.segments = [saved.get((s.first, s.end), s) for s in self.segments]

    def _grow(self, extra: int) -> None:
        need = self.count + extra
        if need <= len(self._lengths):
            return
        capacity = max(need, 2 * len(self._lengths), 1024)
        for name in ("_lengths", "_alive"):
            old = getattr(self, name)
            new = np.zeros(capacity, dtype=old.dtype)
            new[: self.count] = old[: self.count]
            setattr(self, name, new)

    def _compacted(self, segments: list[Segment]) -> list[Segment]:
        """Merge the newest segments while the last is at least half the size of the one before
        (a binary counter: O(log n) segments, each posting merged O(log n) times)."""
        alive = self._alive
        while len(segments) > 1 and 2 * segments[-1].size >= segments[-2].size:
            merged = segments[-2].merged(segments[-1], alive)
            segments = [*segments[:-2], merged]
        return segments

    def kill(self, texts: np.ndarray) -> None:
        """Remove texts (their numbers); dead or unknown ones are ignored."""
        texts = np.unique(np.asarray(texts, dtype=np.int64))
        texts = texts[(texts >= 0) & (texts < self.count)]
        with self._lock:
            texts = texts[self._alive[texts]]
            self._alive[texts] = False
            self.live -= len(texts)
            self.total_length -= float(self._lengths[texts].sum())

    def search(
        self, tokens: Sequence[str], k: int, allowed: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """(text, score) of the best `k` live texts that contain a query token (among `allowed`
        text numbers when given), best first, ties by lower text number."""
        with self._lock:
            segments, count, live, total = self.segments, self.count, self.live, self.total_length
            alive, lengths = self._alive[:count].copy(), self._lengths[:count]
        if live == 0:
            return []
        if allowed is not None:
            mask = np.zeros(count, dtype=bool)
            mask[allowed[(allowed >= 0) & (allowed < count)]] = True
            eligible = alive & mask
        else:
            eligible = alive
        average = total / live
        texts_parts: list[np.ndarray] = []
        score_parts: list[np.ndarray] = []
        for token, repeats in Counter(tokens).items():
            term = token.encode("utf-8")
            found = [s.postings(term) for s in segments]
            texts = np.concatenate([f[0] for f in found])
            tfs = np.concatenate([f[1] for f in found])
            live_postings = alive[texts]
            texts, tfs = texts[live_postings], tfs[live_postings]
            if len(texts) == 0:
                continue
            idf = self._idf(live, len(texts))
            norm = self.k1 * (1 - self.b + self.b * lengths[texts] / average)
            tfc = tfs / (tfs + norm) if self.method != "atire" else tfs * (self.k1 + 1) / (tfs + norm)
            keep = eligible[texts]
            texts_parts.append(texts[keep])
            score_parts.append((np.float32(idf * repeats) * tfc[keep]).astype(np.float32))
        if not texts_parts:
            return []
        all_texts = np.concatenate(texts_parts)
        if len(all_texts) * 8 < count:  # few postings: gather them, not the whole corpus
            rows, inverse = np.unique(all_texts, return_inverse=True)
            scores = np.bincount(inverse, np.concatenate(score_parts), minlength=len(rows))
        else:
            dense = np.bincount(all_texts, np.concatenate(score_parts), minlength=count)
            hit = np.zeros(count, dtype=bool)
            hit[all_texts] = True
            rows = np.flatnonzero(hit)
            scores = dense[rows]
        scores = scores.astype(np.float32)
        if rows.size > k:
            kth = np.partition(scores, rows.size - k)[rows.size - k]
            keep = scores >= kth
            rows, scores = rows[keep], scores[keep]
        order = np.lexsort((rows, -scores))[:k]
        return [(int(rows[i]), float(scores[i])) for i in order]

    def _idf(self, n: int, df: int) -> float:
        if self.method == "lucene":
            return math.log(1 + (n - df + 0.5) / (df + 0.5))
        if self.method == "robertson":
            return max(0.0, math.log((n - df + 0.5) / (df + 0.5)))
        return math.log(n / df)
