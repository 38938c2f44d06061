"""Summing a query's postings per passage in PostgreSQL by merging its terms' scans.

A postings table keyed (term, passage) holds each term's postings in passage order, so each query
term is one index range scan in that order. Merging the scans in that order (an `ORDER BY` over a
`UNION ALL` of ordered branches: a merge append) lets a group aggregate sum each passage's score as
its rows pass, in constant memory. Joining the terms with their postings instead plans a hash table
of every matching passage: at 1M passages 1.8 times as long for BM25 and spilled to disk
(bench/postgres_bm25.py), 1.4-1.9 times for heavy and typical SPLADE queries over 100,000 passages,
where a light one pays under a millisecond more (bench/postgres_sparse_sum.py). BM25
(`lexical.py`) and SPLADE (`sparse.py`) both sum this way.
"""

from __future__ import annotations

from collections.abc import Sequence


def merged_sum(branches: Sequence[str], key: str) -> str:
    """A subquery of (`key`, score): the sum of `s` per `key` over `branches`, each a SELECT of
    (`key`, s) ordered by `key` (one term's postings)."""
    union = " UNION ALL ".join(f"({branch})" for branch in branches)
    merged = f"SELECT * FROM ({union}) AS a ORDER BY {key}"
    return f"SELECT {key}, sum(s) AS score FROM ({merged}) AS u GROUP BY {key}"
