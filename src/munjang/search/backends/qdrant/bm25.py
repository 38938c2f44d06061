"""Exact BM25 for a Qdrant collection: the live corpus statistics beside the records, and the
rescoring of Qdrant's candidates with them.

Qdrant's `bm25` vectors hold each text's lucene term part at the mean length of its push time, and
Qdrant's IDF modifier counts its own points; neither is munjang's score once the collection changed.
So Qdrant only proposes candidates, and each candidate is scored again here, exactly as
`IncrementalBM25` scores it (the same float32 steps, the same tie order: lower label first), from:
- `BM25Stats`: a small SQLite file beside the collection's records (`bm25_stats.db`) holding the
  live texts' count and total length and each token's document frequency, kept by the writer's push
  (a push costs what it changed) and read by any process;
- the candidate's payload: its tokens' counts (`bm25_terms`, `bm25_tfs`) and length (`bm25_length`).

Each of these belongs to one BM25 slot (`slots.py`): the first is `bm25` (the fields above, the
file `bm25_stats.db`); a re-analysis fills another (`bm25_2`: `bm25_2_terms`, …, `bm25_2_stats.db`)
beside the one searched, and searches switch to it in one write.

Qdrant's ranking can differ from the exact one only through the mean length its weights were made
at: a stored weight is at most `max(1, avgdl / avgdl_low)` times too small. `complete` tells when
the candidates fetched so far hold every text that can be in the exact top k, ties included.
"""

from __future__ import annotations

import math
import sqlite3
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..base import CollectionError, Watermark

STATS_NAME = "bm25_stats.db"
FLOAT_SLACK = 1e-5  # Qdrant's float32 scores against the exact ones: a relative margin, not a tolerance

_SCHEMA = """
CREATE TABLE IF NOT EXISTS totals (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS df (term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
"""
_KEYS = ("label", "deletion", "texts", "length_sum")
FIRST_SLOT = "bm25"


def stats_name(slot: str) -> str:
    """The statistics file of a BM25 slot."""
    return STATS_NAME if slot == FIRST_SLOT else f"{slot}_stats.db"


def payload_fields(slot: str) -> tuple[str, str, str]:
    """What a text's first point carries for rescoring in `slot`: its terms, their counts, its length."""
    return f"{slot}_terms", f"{slot}_tfs", f"{slot}_length"


def members_field(slot: str) -> str:
    """The payload field listing the passages of a text (its window) in `slot`."""
    return f"{slot}_members"


class BM25Stats:
    """The live BM25 statistics of one Qdrant collection, with the store watermark they reflect
    (`label`: texts added up to it are counted; `deletion`: deletions up to it are subtracted)."""

    def __init__(self, path: Path, writer: bool) -> None:
        self.path, self.writer = path, writer
        self._conn: sqlite3.Connection | None = None

    @property
    def exists(self) -> bool:
        return self.path.is_file()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            mode = "rwc" if self.writer else "ro"
            try:
                conn = sqlite3.connect(f"file:{self.path}?mode={mode}", uri=True, isolation_level=None)
                conn.execute("PRAGMA busy_timeout = 60000")
                if self.writer:
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("PRAGMA synchronous = FULL")
                    conn.executescript(_SCHEMA)
            except sqlite3.DatabaseError as e:
                raise CollectionError(f"{self.path}: cannot open the BM25 statistics ({e})") from None
            self._conn = conn
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def totals(self) -> dict[str, int]:
        """label, deletion, texts, length_sum (all 0 for statistics not yet written)."""
        if not self.writer and not self.exists:
            return dict.fromkeys(_KEYS, 0)
        rows = dict(self._connection().execute("SELECT key, value FROM totals").fetchall())
        return {k: int(rows.get(k, 0)) for k in _KEYS}

    @property
    def watermark(self) -> Watermark:
        totals = self.totals()
        return Watermark(totals["label"], totals["deletion"])

    def read(self, terms: Iterable[str]) -> tuple[int, int, dict[str, int]]:
        """(live texts, their total length, document frequency of each of `terms`), one state."""
        wanted = sorted(set(terms))
        conn = self._connection()
        conn.execute("BEGIN")
        try:
            totals = self.totals()
            df: dict[str, int] = {}
            for start in range(0, len(wanted), 500):
                part = wanted[start : start + 500]
                marks = ", ".join("?" * len(part))
                df.update(conn.execute(f"SELECT term, df FROM df WHERE term IN ({marks})", part).fetchall())
        finally:
            conn.execute("COMMIT")
        return totals["texts"], totals["length_sum"], df

    def apply(
        self,
        added: Sequence[Sequence[str]],
        removed: Sequence[tuple[Sequence[str], int]],
        watermark: Watermark,
        reset: bool = False,
    ) -> None:
        """Count the texts `added` (token lists) and subtract the `removed` ones (unique terms,
        length), then record `watermark`, in one transaction; `reset` starts from nothing."""
        change: Counter[str] = Counter()
        texts, length = len(added) - len(removed), 0
        for tokens in added:
            change.update(set(tokens))
            length += len(tokens)
        for terms, size in removed:
            change.subtract(set(terms))
            length -= size
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            if reset:
                conn.execute("DELETE FROM df")
                conn.execute("DELETE FROM totals")
            before = self.totals()
            conn.executemany(
                "INSERT INTO df (term, df) VALUES (?, ?) "
                "ON CONFLICT (term) DO UPDATE SET df = df + excluded.df",
                [(term, n) for term, n in change.items() if n],
            )
            conn.execute("DELETE FROM df WHERE df <= 0")
            now = {
                "label": max(before["label"], watermark.label),
                "deletion": max(before["deletion"], watermark.deletion),
                "texts": before["texts"] + texts,
                "length_sum": before["length_sum"] + length,
            }
            conn.executemany("INSERT OR REPLACE INTO totals (key, value) VALUES (?, ?)", list(now.items()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def token_index(token: str) -> int:
    """The sparse index of a token (CRC-32: stable across processes and versions)."""
    return zlib.crc32(token.encode("utf-8"))


def bm25_weights(tokens: Sequence[str], k1: float, b: float, avgdl: float) -> tuple[list[int], list[float]]:
    """(indices, weights) of a passage's BM25 sparse vector, the lucene term part per token."""
    counts = Counter(token_index(t) for t in tokens)
    norm = k1 * (1.0 - b + b * len(tokens) / max(avgdl, 1e-9))
    indices = sorted(counts)
    return indices, [counts[i] / (counts[i] + norm) for i in indices]


def text_payload(tokens: Sequence[str], slot: str = FIRST_SLOT) -> dict[str, Any]:
    """What a text's first point carries for exact rescoring in `slot`: its tokens' counts and length."""
    counts = Counter(tokens)
    terms, tfs, length = payload_fields(slot)
    return {terms: list(counts), tfs: list(counts.values()), length: len(tokens)}


def idf(n: int, df: int) -> float:
    """Lucene's IDF, as munjang's BM25 computes it."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def rescore(
    query: Sequence[str],
    payloads: Sequence[dict[str, Any]],
    n: int,
    length_sum: int,
    df: dict[str, int],
    k1: float,
    b: float,
    slot: str = FIRST_SLOT,
) -> np.ndarray:
    """The exact lucene BM25 score of each candidate text (its payload in `slot`) for the tokenized
    query, computed with `IncrementalBM25.search`'s float32 steps in its order, so equal texts tie
    exactly."""
    scores = np.zeros(len(payloads), dtype=np.float64)
    if n <= 0 or not payloads:
        return scores.astype(np.float32)
    average = length_sum / n
    terms_field, tfs_field, length_field = payload_fields(slot)
    lengths = np.asarray([p.get(length_field, 0) for p in payloads], dtype=np.float32)
    tables = [dict(zip(p.get(terms_field, []), p.get(tfs_field, []), strict=True)) for p in payloads]
    for token, repeats in Counter(query).items():
        rows = [i for i, table in enumerate(tables) if token in table]
        if not rows or df.get(token, 0) <= 0:
            continue
        tfs = np.asarray([tables[i][token] for i in rows], dtype=np.float32)
        norm = k1 * (1 - b + b * lengths[rows] / average)
        part = np.float32(idf(n, df[token]) * repeats) * (tfs / (tfs + norm))
        scores[rows] += part.astype(np.float32)
    return scores.astype(np.float32)


def complete(
    qdrant_scores: Sequence[float], exact: np.ndarray, k: int, fetched_all: bool, bound: float
) -> bool:
    """Whether the candidates hold the exact top k: Qdrant returned everything it matched, or the
    best score any unfetched text can have (`bound` times the last score Qdrant gave) is below the
    k-th exact score, strictly, so no tie is left out."""
    if fetched_all:
        return True
    if len(exact) < k or not len(qdrant_scores):
        return False
    kth = float(np.sort(exact)[::-1][k - 1])
    return float(qdrant_scores[-1]) * bound * (1 + FLOAT_SLACK) < kth


def growth_bound(avgdl: float, low: float | None) -> float:
    """How many times too small a stored weight can be: it was made at a mean length >= `low`."""
    if low is None or low <= 0 or avgdl <= 0:
        return 1.0
    return max(1.0, avgdl / low)
