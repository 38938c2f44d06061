"""BM25 that grows with what is added: postings in segments, scores computed at query time.

bm25s precomputes every (term, document) score, which depend on the corpus size, the mean length
and each term's document frequency: any add changes them all, so it can only rebuild. Here the
index keeps what does not change, each text's term frequencies (postings) and its length, and
computes a query's scores from the current statistics, with the same formulas as bm25s (see
`bm25.py`; the methods whose documents without a query term score zero: lucene, robertson,
atire). An add costs what it adds; a delete marks texts dead and updates two counters.

Postings live in immutable segments, each sorted by term: an add appends one, and segments of
similar size are merged (like a binary counter), so a query reads O(log n) of them and merging
costs O(log n) per posting over the index's life. Dead texts' postings are dropped when merged.
A term's document frequency is counted at query time over its live postings, which the query
reads anyway, so deletes never rewrite postings.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

METHODS = ("lucene", "robertson", "atire")


@dataclass(frozen=True)
class Segment:
    """Postings of a run of texts, sorted by term: term ids `terms` (unique, ascending), and for
    `terms[i]` the texts `texts[ptr[i]:ptr[i + 1]]` with their term frequencies `tfs[...]`."""

    terms: np.ndarray
    ptr: np.ndarray
    texts: np.ndarray
    tfs: np.ndarray

    @property
    def size(self) -> int:
        return len(self.texts)

    @staticmethod
    def build(term_ids: np.ndarray, text_ids: np.ndarray, tfs: np.ndarray) -> Segment:
        """A segment from unordered postings (term, text, tf), each (term, text) once."""
        order = np.lexsort((text_ids, term_ids))
        terms_sorted = term_ids[order]
        unique, starts = np.unique(terms_sorted, return_index=True)
        ptr = np.append(starts, len(terms_sorted)).astype(np.int64)
        return Segment(
            unique.astype(np.int64), ptr, text_ids[order].astype(np.int64), tfs[order].astype(np.float32)
        )

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        i = int(np.searchsorted(self.terms, term))
        if i == len(self.terms) or self.terms[i] != term:
            return _EMPTY_INT, _EMPTY_FLOAT
        return self.texts[self.ptr[i] : self.ptr[i + 1]], self.tfs[self.ptr[i] : self.ptr[i + 1]]

    def merged(self, other: Segment, alive: np.ndarray) -> Segment:
        """This segment and `other` as one, without the postings of dead texts."""
        terms = np.concatenate([np.repeat(s.terms, np.diff(s.ptr)) for s in (self, other)])
        texts = np.concatenate([self.texts, other.texts])
        tfs = np.concatenate([self.tfs, other.tfs])
        keep = alive[texts]
        return Segment.build(terms[keep], texts[keep], tfs[keep])


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
        self.vocab: dict[str, int] = {}
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
        terms: list[int] = []
        texts: list[int] = []
        tfs: list[int] = []
        lengths = np.zeros(len(documents), dtype=np.float32)
        vocab = self.vocab
        for i, tokens in enumerate(documents):
            lengths[i] = len(tokens)
            for token, tf in Counter(tokens).items():
                term = vocab.get(token)
                if term is None:
                    term = vocab[token] = len(vocab)
                terms.append(term)
                texts.append(self.count + i)
                tfs.append(tf)
        segment = Segment.build(
            np.asarray(terms, dtype=np.int64),
            np.asarray(texts, dtype=np.int64),
            np.asarray(tfs, dtype=np.float32),
        )
        with self._lock:
            self._grow(len(documents))
            start, end = self.count, self.count + len(documents)
            self._lengths[start:end] = lengths
            self._alive[start:end] = True
            self.count, self.live = end, self.live + len(documents)
            self.total_length += float(lengths.sum())
            self.segments = self._compacted([*self.segments, segment])

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
            term = self.vocab.get(token)
            if term is None:
                continue
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
