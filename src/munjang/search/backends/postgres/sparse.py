"""SPLADE sparse retrieval inside PostgreSQL: the sparse vectors cached by text hash, postings by
passage label kept in the same transactions as the passages, and one SQL query per search query that
scores the dot product, filters and ranks, so a munjang process holds nothing per passage and every
process on the database sees each commit at its next search.

pgserver's pgvector (0.6) has no `sparsevec`, so the vectors are arrays and the index is a table:
- `sparse_vectors (model, text_hash, ids int4[], weights float4[])`: the cache the collection fills
  (`cached_sparse`, `put_sparse`), like the embedding cache: a text seen before costs no encoding;
- `sparse_postings (term, label, weight)`: one row per token of each live passage, keyed by
  (term, label) and covering the weight, so a query token is one index range scan. `insert` derives
  a batch's postings from the cache (`index_sparse`), `delete` removes them (`unindex_sparse`).

A query's score for a passage is Σ q_j · w_jd over the tokens j both have (float8 in SQL, summed
over merged scans of the tokens' postings, `postgres_merge.py`; the in-process
`index/sparse_index.py` sums float32), and only passages sharing a token with the query score, as
in process; ties go to the lower label.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import CollectionError, Filter, Queries, TopK
from .lexical import has_tables
from .merge import merged_sum

if TYPE_CHECKING:
    from .store import PostgresStore  # which imports this module

SPARSE_TABLES = ("sparse_vectors", "sparse_postings")


def has_sparse(store: PostgresStore) -> bool:
    """Whether the collection has the sparse tables (it was created with a sparse model)."""
    return has_tables(store, SPARSE_TABLES)


def create_sparse(store: PostgresStore) -> None:
    """The sparse cache and postings tables (inside the collection's creating transaction)."""
    store.conn.execute(
        f"CREATE TABLE {store.t('sparse_vectors')} (model text NOT NULL, text_hash text NOT NULL, "
        "ids int4[] NOT NULL, weights float4[] NOT NULL, PRIMARY KEY (model, text_hash))"
    )
    store.conn.execute(
        f"CREATE TABLE {store.t('sparse_postings')} (term int4 NOT NULL, label bigint NOT NULL, "
        "weight float4 NOT NULL, PRIMARY KEY (term, label) INCLUDE (weight))"
    )


def cached_sparse(store: PostgresStore, model: str, hashes: Iterable[str]) -> set[str]:
    """The hashes that already have a sparse vector for `model`."""
    rows = store.conn.execute(
        f"SELECT text_hash FROM {store.t('sparse_vectors')} WHERE model = %s AND text_hash = ANY(%s)",
        (model, list(dict.fromkeys(hashes))),
    ).fetchall()
    return {r[0] for r in rows}


def put_sparse(
    store: PostgresStore, model: str, hashes: Sequence[str], rows: Sequence[tuple[np.ndarray, np.ndarray]]
) -> None:
    """Sparse vectors (token ids, weights) into the cache, pipelined; inside the caller's transaction."""
    store.conn.cursor().executemany(
        f"INSERT INTO {store.t('sparse_vectors')} (model, text_hash, ids, weights) "
        "VALUES (%s, %s, %s::int4[], %s::float4[]) ON CONFLICT DO NOTHING",
        [
            (
                model,
                h,
                np.asarray(ids, dtype=np.int64).tolist(),
                np.asarray(weights, dtype=np.float32).tolist(),
            )
            for h, (ids, weights) in zip(hashes, rows, strict=True)
        ],
    )


def sparse_after(
    store: PostgresStore, model: str, after: int, batch: int = 20_000
) -> Iterator[tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]]:
    """(labels, sparse vectors) of passages with label > `after`, in label order, in batches."""
    query = (
        f"SELECT d.label, s.ids, s.weights FROM {store.t('documents')} d "
        f"LEFT JOIN {store.t('sparse_vectors')} s ON s.model = %s AND s.text_hash = d.text_hash "
        "WHERE d.label > %s ORDER BY d.label LIMIT %s"
    )
    while True:
        rows = store.conn.execute(query, (model, after, batch)).fetchall()
        if not rows:
            return
        missing = [r[0] for r in rows if r[1] is None]
        if missing:
            raise CollectionError(
                f"{store.path}: documents without a sparse vector for {model!r} (labels {missing[:5]})"
            )
        labels = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        yield labels, [(np.asarray(r[1], np.uint32), np.asarray(r[2], np.float32)) for r in rows]
        after = int(labels[-1])


def index_sparse(store: PostgresStore, model: str, first: int, last: int) -> None:
    """Postings of the passages with labels in [first, last], just inserted by this transaction,
    from their cached vectors (a token given twice in one vector counts its weights summed)."""
    documents, vectors = store.t("documents"), store.t("sparse_vectors")
    missing = store.conn.execute(
        f"SELECT d.label FROM {documents} d WHERE d.label BETWEEN %s AND %s AND NOT EXISTS "
        f"(SELECT 1 FROM {vectors} s WHERE s.model = %s AND s.text_hash = d.text_hash) LIMIT 5",
        (first, last, model),
    ).fetchall()
    if missing:
        labels = [int(r[0]) for r in missing]
        raise CollectionError(
            f"{store.path}: documents without a sparse vector for {model!r} (labels {labels})"
        )
    store.conn.execute(
        f"INSERT INTO {store.t('sparse_postings')} (term, label, weight) "
        f"SELECT u.term, d.label, sum(u.weight) FROM {documents} d JOIN {vectors} s "
        "ON s.model = %s AND s.text_hash = d.text_hash "
        "CROSS JOIN LATERAL unnest(s.ids, s.weights) AS u(term, weight) "
        "WHERE d.label BETWEEN %s AND %s GROUP BY d.label, u.term",
        (model, first, last),
    )


def unindex_sparse(store: PostgresStore, model: str, ids: Sequence[str]) -> None:
    """Drop the postings of these documents' passages (before the passages go)."""
    store.conn.execute(
        f"DELETE FROM {store.t('sparse_postings')} p USING {store.t('documents')} d, "
        f"{store.t('sparse_vectors')} s, unnest(s.ids) AS u(term) WHERE d.id = ANY(%s) AND s.model = %s "
        "AND s.text_hash = d.text_hash AND p.term = u.term AND p.label = d.label",
        (list(ids), model),
    )


def sparse_problems(store: PostgresStore, model: str) -> list[str]:
    """Disagreement between the postings and the stored passages' cached vectors (empty when sound)."""
    documents, vectors, postings = store.t("documents"), store.t("sparse_vectors"), store.t("sparse_postings")
    row = store.conn.execute(
        f"SELECT (SELECT count(*) FROM {documents} d WHERE NOT EXISTS (SELECT 1 FROM {vectors} s "
        "WHERE s.model = %(model)s AND s.text_hash = d.text_hash)), "
        f"(SELECT count(*) FROM {postings} p WHERE NOT EXISTS (SELECT 1 FROM {documents} d "
        "WHERE d.label = p.label)), "
        f"(SELECT count(*) FROM {postings}), "
        f"(SELECT coalesce(sum(n), 0) FROM {documents} d JOIN {vectors} s ON s.model = %(model)s "
        "AND s.text_hash = d.text_hash "
        "CROSS JOIN LATERAL (SELECT count(DISTINCT t) AS n FROM unnest(s.ids) AS t) AS c)",
        {"model": model},
    ).fetchone()
    missing, orphans, held, expected = (int(x) for x in row)
    problems = []
    if missing:
        problems.append(f"{missing} passages have no sparse vector for {model!r}")
    if orphans:
        problems.append(f"{orphans} sparse postings point to no stored passage")
    if held != expected:
        problems.append(f"the sparse postings hold {held} entries; the stored vectors give {expected}")
    return problems


class PostgresSparse:
    """A collection's sparse retrieval answered by PostgreSQL (see the module docstring): nothing to
    load or sync; each search is one query per query vector, with the filter in the same query."""

    def __init__(self, store: PostgresStore, model: str) -> None:
        if not has_sparse(store):
            raise CollectionError(f"{store.path}: the collection has a sparse model but no sparse tables")
        self.store, self.model = store, model
        self._postings, self._documents = store.t("sparse_postings"), store.t("documents")

    def statement(self, terms: int, condition: str | None) -> str:
        """The search statement of a query vector of `terms` distinct tokens, filtered by
        `condition` (SQL over the documents table) or not: each token's postings summed per passage
        over merged scans (`postgres_merge.py`). Parameters: each token's query weight and id, then
        the condition's, then k."""
        branch = (
            f"SELECT p.label, %s::float8 * p.weight AS s FROM {self._postings} p "
            "WHERE p.term = %s ORDER BY p.label"
        )
        scored = f"WITH scored AS ({merged_sum([branch] * terms, 'label')}) "
        if condition is None:
            return f"{scored}SELECT label, score FROM scored WHERE score <> 0 ORDER BY 2 DESC, 1 LIMIT %s"
        return (
            f"{scored}SELECT s.label, s.score FROM scored s JOIN {self._documents} d ON d.label = s.label "
            f"WHERE s.score <> 0 AND ({condition}) ORDER BY 2 DESC, 1 LIMIT %s"
        )

    def search(
        self, queries: Sequence[tuple[np.ndarray, np.ndarray]], k: int, allowed: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        """The best `k` passages (label, score) per query vector, among `allowed` labels if given."""
        if allowed is None:
            return self.search_where(queries, k, None)
        where = ("d.label = ANY(%s)", [np.asarray(allowed, dtype=np.int64).tolist()])
        return self.search_where(queries, k, where)

    def search_where(
        self, queries: Sequence[tuple[np.ndarray, np.ndarray]], k: int, where: tuple[str, list[Any]] | None
    ) -> list[list[tuple[int, float]]]:
        """The best `k` passages per query vector (token ids, weights) among those matching `where`,
        the compiled metadata filter (SQL over the documents table, with its `%s` parameters): best
        first, ties by lower label; passages sharing no token with the query are left out."""
        out: list[list[tuple[int, float]]] = []
        for ids, weights in queries:
            terms, at = np.unique(np.asarray(ids, dtype=np.int64), return_inverse=True)
            summed = np.zeros(len(terms), dtype=np.float64)
            np.add.at(summed, at, np.asarray(weights, dtype=np.float32))
            keep = summed != 0
            if not keep.any():
                out.append([])
                continue
            pairs = zip(summed[keep].tolist(), terms[keep].tolist(), strict=True)
            params: list[Any] = [x for pair in pairs for x in pair]
            sql = self.statement(int(keep.sum()), None if where is None else where[0])
            params += [] if where is None else list(where[1])
            rows = self.store.conn.execute(sql, [*params, int(k)]).fetchall()
            out.append([(int(label), float(score)) for label, score in rows])
        return out

    def retrieve(self, store: Any, queries: Queries, k: int, filter: Filter | None) -> TopK:
        """`search_where` with the filter compiled to SQL, in the same query."""
        return self.search_where(queries.encoded, k, None if filter is None else filter.where)

    def stored(self, store: Any, labels: Sequence[int]) -> list[dict[int, float]]:
        """Each label's vector as {token id: weight} (empty where none is stored)."""
        wanted = [int(x) for x in labels]
        vectors = self.store.t("sparse_vectors")
        rows = self.store.conn.execute(
            f"SELECT d.label, s.ids, s.weights FROM {self._documents} d JOIN {vectors} s "
            "ON s.model = %s AND s.text_hash = d.text_hash WHERE d.label = ANY(%s)",
            (self.model, wanted),
        ).fetchall()
        found: dict[int, dict[int, float]] = {}
        for label, ids, weights in rows:
            pairs = zip(
                np.asarray(ids, np.int64).tolist(), np.asarray(weights, np.float32).tolist(), strict=True
            )
            found[int(label)] = dict(pairs)
        return [found.get(x, {}) for x in wanted]

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        """Disagreement between the postings and the stored passages (`labels`: every stored one)."""
        return sparse_problems(self.store, self.model)
