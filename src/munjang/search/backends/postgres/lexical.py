"""BM25 inside PostgreSQL: postings tables kept in the same transactions as the passages, and one
SQL query per search query that scores, filters and ranks, so a munjang process holds nothing per
passage and every process on the database sees each commit at its next search.

The passages of one window of a document share their tokens (`passages.py`); BM25 counts such a
text once (as `live_lexical.LexicalIndex` does): consecutive passages of one document with equal
tokens are one *text*, numbered by its first passage's label and covering the labels up to
`last_label`. Three tables, derived from `documents.tokens` (the source of truth):
- `lexical_texts (text_id, last_label, length)`: the live texts and their token counts;
- `lexical_postings (term, text_id, tf, length)`: one row per distinct term of a text, keyed by
  (term, text_id) and covering tf and the text's length, so a query term is one index range scan;
- `lexical_stats (texts, length)`: the live texts and their total length, one row, updated with
  every insert and delete;
- `lexical_terms (term, df)`: each term's document frequency (the texts holding it), updated in the
  statements that add and drop its postings (a term whose last text goes loses its row, so the
  table holds the live vocabulary, not every term ever stored), so a query reads a term's df as
  one row where counting its postings took time that grows with the collection (about 2.6 ms a
  common term at 1M passages).
  A collection made before it gets it, counted from its postings, the first time a writable munjang
  opens it; until then, and for readers opened before, df is counted at query time.

Scores are those of `index/incremental_bm25.py` (bm25s's formulas; the methods whose documents
without a query term score zero: lucene, robertson, atire), computed in float8:
    lucene     idf = ln(1 + (N - df + 0.5) / (df + 0.5))   tfc = tf / (tf + k1 * L)
    robertson  idf = max(0, ln((N - df + 0.5) / (df + 0.5)))
    atire      idf = ln(N / df)                            tfc = tf * (k1 + 1) / (tf + k1 * L)
with L = 1 - b + b * length / mean length and df that of the live postings. A
collection created before the postings existed gets them from its stored tokens the first time a
writable munjang opens it (`create_postings`, one transaction under the writer lock); until then,
and for the methods that need every document (bm25l, bm25+), BM25 runs in process.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import Filter, Queries, TopK
from .merge import merged_sum

if TYPE_CHECKING:
    from .store import PostgresStore  # which imports this module


# The methods scored in SQL (a document without a query term scores zero in them).
SQL_METHODS = ("lucene", "robertson", "atire")
POSTINGS_TABLES = ("lexical_texts", "lexical_postings", "lexical_stats")
TERMS_TABLE = "lexical_terms"

IDF = {
    "lucene": "ln(1 + ({n} - c.df + 0.5::float8) / (c.df + 0.5::float8))",
    "robertson": "greatest(0, ln(({n} - c.df + 0.5::float8) / (c.df + 0.5::float8)))",
    "atire": "ln({n} / c.df)",
}
# tf / (tf + k1 * (1 - b + b * length / mean)), with k1 (1 - b) and k1 b / mean computed once a query;
# k1 and b enter as float literals (`float` checked, so nothing else can), the rest as parameters.
TFC = {
    "lucene": "p.tf / (p.tf + {k1_b} + {per_length} * p.length)",
    "robertson": "p.tf / (p.tf + {k1_b} + {per_length} * p.length)",
    "atire": "p.tf * ({k1} + 1) / (p.tf + {k1_b} + {per_length} * p.length)",
}


def served_in_sql(config: dict[str, Any]) -> bool:
    """Whether BM25 with this configuration is computed in SQL (else in process)."""
    return config.get("method", "lucene") in SQL_METHODS and "delta" not in config


def has_tables(store: Any, tables: Sequence[str]) -> bool:
    """Whether the collection's schema holds every one of `tables`."""
    row = store.conn.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s AND table_name = ANY(%s)",
        (store.schema, list(tables)),
    ).fetchone()
    return bool(row and row[0] == len(tables))


def has_postings(store: PostgresStore) -> bool:
    """Whether the collection has its postings tables (one made by this munjang, or upgraded)."""
    return has_tables(store, POSTINGS_TABLES)


def has_terms(store: PostgresStore) -> bool:
    """Whether the collection keeps its terms' document frequencies (`lexical_terms`)."""
    return has_tables(store, (TERMS_TABLE,))


def create_terms(store: PostgresStore) -> None:
    """The terms table, counted from the postings (inside a transaction)."""
    terms = store.t(TERMS_TABLE)
    store.conn.execute(f'CREATE TABLE {terms} (term text COLLATE "C" PRIMARY KEY, df bigint NOT NULL)')
    postings = store.t("lexical_postings")
    store.conn.execute(f"INSERT INTO {terms} (term, df) SELECT term, count(*) FROM {postings} GROUP BY term")


def create_postings(store: PostgresStore) -> None:
    """The postings tables, filled from every stored passage's tokens (inside a transaction)."""
    conn = store.conn
    conn.execute(
        f"CREATE TABLE {store.t('lexical_texts')} (text_id bigint PRIMARY KEY, "
        "last_label bigint NOT NULL, length integer NOT NULL)"
    )
    conn.execute(
        f'CREATE TABLE {store.t("lexical_postings")} (term text COLLATE "C" NOT NULL, '
        "text_id bigint NOT NULL, tf integer NOT NULL, length integer NOT NULL, "
        "PRIMARY KEY (term, text_id) INCLUDE (tf, length))"
    )
    conn.execute(
        f"CREATE TABLE {store.t('lexical_stats')} (one boolean PRIMARY KEY DEFAULT true CHECK (one), "
        "texts bigint NOT NULL DEFAULT 0, length bigint NOT NULL DEFAULT 0)"
    )
    conn.execute(f"INSERT INTO {store.t('lexical_stats')} DEFAULT VALUES")
    create_terms(store)
    index_passages(store, 0)


def index_passages(store: PostgresStore, first: int, last: int | None = None) -> None:
    """Texts and postings of the passages with labels in [first, last] (all after `first` when
    `last` is None), just inserted by this transaction (a document's passages come together)."""
    conn, documents = store.conn, store.t("documents")
    upper = "" if last is None else "AND label <= %(last)s"
    params = {"first": first, "last": last}
    conn.execute(
        f"INSERT INTO {store.t('lexical_texts')} (text_id, last_label, length) "
        "SELECT min(label), max(label), jsonb_array_length((array_agg(tokens ORDER BY label))[1]) "
        "FROM (SELECT label, tokens, sum(first::int) OVER (ORDER BY label) AS text FROM ("
        "SELECT label, tokens, (lag(id) OVER w IS DISTINCT FROM id "
        "OR lag(tokens) OVER w IS DISTINCT FROM tokens) AS first "
        f"FROM {documents} WHERE label >= %(first)s {upper} WINDOW w AS (ORDER BY label)) AS marked"
        ") AS grouped GROUP BY text",
        params,
    )
    terms = store.t(TERMS_TABLE)
    conn.execute(
        f"WITH added AS (INSERT INTO {store.t('lexical_postings')} (term, text_id, tf, length) "
        "SELECT t.term, x.text_id, count(*), x.length "
        f"FROM {store.t('lexical_texts')} x JOIN {documents} d ON d.label = x.text_id "
        "CROSS JOIN LATERAL jsonb_array_elements_text(d.tokens) AS t(term) "
        f"WHERE x.text_id >= %(first)s {upper.replace('label', 'x.text_id')} "
        "GROUP BY x.text_id, t.term, x.length RETURNING term) "
        f"INSERT INTO {terms} (term, df) SELECT term, count(*) FROM added GROUP BY term "
        f"ON CONFLICT (term) DO UPDATE SET df = {terms}.df + excluded.df",
        params,
    )
    stats = store.t("lexical_stats")
    conn.execute(
        f"UPDATE {stats} SET texts = texts + n, length = {stats}.length + total FROM "
        f"(SELECT count(*) AS n, coalesce(sum(length), 0) AS total FROM {store.t('lexical_texts')} "
        f"WHERE text_id >= %(first)s {upper.replace('label', 'text_id')}) AS added",
        params,
    )


def reindex_postings(store: PostgresStore) -> None:
    """Every text and posting again from the stored tokens, after they were analysed again (inside
    the transaction that changed them: a reader searches the old postings until it commits)."""
    for table in ("lexical_postings", "lexical_texts", TERMS_TABLE):
        store.conn.execute(f"DELETE FROM {store.t(table)}")
    store.conn.execute(f"UPDATE {store.t('lexical_stats')} SET texts = 0, length = 0")
    index_passages(store, 0)


def unindex_documents(store: PostgresStore, ids: Sequence[str]) -> None:
    """Drop the texts and postings of these documents' passages (before the passages go)."""
    stats = store.t("lexical_stats")
    store.conn.execute(
        f"WITH gone AS (DELETE FROM {store.t('lexical_texts')} x USING {store.t('documents')} d "
        "WHERE d.id = ANY(%(ids)s) AND x.text_id = d.label RETURNING x.text_id, x.length), "
        f"postings AS (DELETE FROM {store.t('lexical_postings')} p "
        f"USING gone g, {store.t('documents')} d, jsonb_array_elements_text(d.tokens) AS t(term) "
        "WHERE d.label = g.text_id AND p.term = t.term AND p.text_id = g.text_id RETURNING p.term), "
        "dropped AS (SELECT term, count(*) AS n FROM postings GROUP BY term), "
        f"emptied AS (DELETE FROM {store.t(TERMS_TABLE)} c USING dropped WHERE c.term = dropped.term "
        "AND c.df <= dropped.n), "
        f"terms AS (UPDATE {store.t(TERMS_TABLE)} c SET df = c.df - n FROM dropped "
        "WHERE c.term = dropped.term AND c.df > dropped.n) "
        f"UPDATE {stats} SET texts = texts - (SELECT count(*) FROM gone), "
        f"length = {stats}.length - (SELECT coalesce(sum(length), 0) FROM gone)",
        {"ids": list(ids)},
    )


def postings_problems(store: PostgresStore) -> list[str]:
    """Disagreement between the postings' statistics and their texts, or between the terms'
    document frequencies and their postings (empty when sound)."""
    problems = []
    row = store.conn.execute(
        f"SELECT s.texts, s.length, x.n, x.total FROM {store.t('lexical_stats')} s, "
        f"(SELECT count(*) AS n, coalesce(sum(length), 0) AS total FROM {store.t('lexical_texts')}) x"
    ).fetchone()
    if (int(row[0]), int(row[1])) != (int(row[2]), int(row[3])):
        said, found = f"{row[0]} texts of {row[1]} tokens", f"{row[2]} of {row[3]}"
        problems.append(f"the lexical statistics say {said}; the postings' texts are {found}")
    if has_terms(store):
        wrong = store.conn.execute(
            f"SELECT count(*) FROM (SELECT term, count(*) AS df FROM {store.t('lexical_postings')} "
            f"GROUP BY term) p FULL JOIN {store.t(TERMS_TABLE)} c USING (term) "
            "WHERE coalesce(p.df, 0) <> coalesce(c.df, 0)"
        ).fetchone()[0]
        if wrong:
            problems.append(f"terms whose document frequency disagrees with their postings: {wrong}")
    return problems


class PostgresLexical:
    """A collection's BM25 answered by PostgreSQL (see the module docstring): nothing to load or
    sync; each search is one query per tokenized query, with the filter in the same query."""

    incremental = True
    ready = True

    def __init__(self, store: PostgresStore, config: dict[str, Any]) -> None:
        self.store = store
        self.method = str(config.get("method", "lucene"))
        self.k1, self.b = float(config.get("k1", 1.5)), float(config.get("b", 0.75))
        t = store.t
        k1, b, stats = f"{self.k1!r}::float8", f"{self.b!r}::float8", t("lexical_stats")
        # The statistics as scalar subqueries: read once a query, and the planner knows them one row.
        n = f"(SELECT texts::float8 FROM {stats})"
        per_length = f"(SELECT {k1} * {b} * greatest(texts, 1) / nullif(length, 0) FROM {stats})"
        k1_b = f"{self.k1 * (1 - self.b)!r}::float8"
        match = 'term = q.term COLLATE "C"'
        if has_terms(store):
            df = f"(SELECT df::float8 AS df FROM {t(TERMS_TABLE)} c WHERE c.{match})"
        else:
            df = f"(SELECT count(*)::float8 AS df FROM {t('lexical_postings')} p WHERE p.{match})"
        self._tfc = TFC[self.method].format(k1=k1, k1_b=k1_b, per_length=per_length)
        self._postings = t("lexical_postings")
        # Each query term's weight (query count x idf, its document frequency read from the terms
        # table, or counted on the postings' index in a collection made before it), numbered;
        # `q` is materialized so that each term's idf is computed once, not once per posting, as an
        # inlined CTE would (at 1M passages a query's postings are 50,000-150,000 rows).
        self._weights = (
            f"WITH q AS MATERIALIZED (SELECT q.n, q.term, q.weight * {IDF[self.method].format(n=n)} AS w "
            "FROM unnest(%s::text[], %s::float8[]) WITH ORDINALITY AS q(term, weight, n) CROSS JOIN LATERAL "
            f"{df} AS c WHERE c.df > 0), "
        )
        self._passages = (
            f"JOIN {t('lexical_texts')} t ON t.text_id = x.text_id "
            f"JOIN {t('documents')} d ON d.label BETWEEN t.text_id AND t.last_label "
        )

    def _scored(self, terms: int) -> str:
        """The `q` and `scored` (text_id, score) CTEs of a query of `terms` distinct terms: each
        term's postings summed per text over merged scans (`postgres_merge.py`). A term absent from
        the collection has no weight and no postings: its scan finds nothing."""
        branches = [
            f"SELECT p.text_id, (SELECT w FROM q WHERE q.n = {n}) * {self._tfc} AS s "
            f"FROM {self._postings} p WHERE p.term = %s ORDER BY p.text_id"
            for n in range(1, terms + 1)
        ]
        return f"{self._weights}scored AS ({merged_sum(branches, 'text_id')}) "

    def statement(self, terms: int, condition: str | None) -> str:
        """The search statement of a query of `terms` distinct terms, filtered by `condition` (SQL
        over the documents table) or not. Parameters: the terms, their query counts, each term
        again (its scan), then k twice (unfiltered) or the condition's and k."""
        scored = self._scored(terms)
        if condition is None:
            # Unfiltered: only the best k texts can give the best k passages.
            return (
                f"{scored}SELECT d.label, x.score FROM (SELECT text_id, score FROM scored "
                f"ORDER BY score DESC, text_id LIMIT %s) x {self._passages}"
                "ORDER BY x.score DESC, d.label LIMIT %s"
            )
        return (
            f"{scored}SELECT d.label, x.score FROM scored x {self._passages}"
            f"WHERE {condition} ORDER BY x.score DESC, d.label LIMIT %s"
        )

    @property
    def labels(self) -> np.ndarray:
        """The labels of the passages the postings cover, ascending (`check` compares them)."""
        rows = self.store.conn.execute(
            f"SELECT d.label FROM {self.store.t('lexical_texts')} t JOIN {self.store.t('documents')} d "
            "ON d.label BETWEEN t.text_id AND t.last_label ORDER BY d.label"
        ).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def sync(self, store: Any, wait: bool = False) -> bool:
        """Nothing to catch up: the postings change in the writer's transaction."""
        return False

    def save_files(self, store: Any, least: int = 1) -> None:
        """No files: the postings are tables."""

    def retrieve(self, store: Any, queries: Queries, k: int, filter: Filter | None) -> TopK:
        """`search_where` with the filter compiled to SQL, in the same query."""
        return self.search_where(queries.encoded, k, None if filter is None else filter.where)

    def stored(self, store: Any, labels: Sequence[int]) -> list[list[str]]:
        found = store.tokens_of(list(labels))
        return [found.get(int(x), []) for x in labels]

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        return [] if np.array_equal(self.labels, labels) else ["lexical index does not match the documents"]

    def search(
        self, queries: Sequence[Sequence[str]], k: int, allowed: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        """The best `k` passages (label, score) per tokenized query, among `allowed` labels if given."""
        if allowed is None:
            return self.search_where(queries, k, None)
        where = ("d.label = ANY(%s)", [np.asarray(allowed, dtype=np.int64).tolist()])
        return self.search_where(queries, k, where)

    def search_where(
        self, queries: Sequence[Sequence[str]], k: int, where: tuple[str, list[Any]] | None
    ) -> list[list[tuple[int, float]]]:
        """The best `k` passages per tokenized query among those matching `where`, the compiled
        metadata filter (SQL over the documents table, with its `%s` parameters), in one query:
        texts best first, ties by lower text number, each giving its passages in label order."""
        out: list[list[tuple[int, float]]] = []
        for tokens in queries:
            counts = Counter(tokens)
            if not counts:
                out.append([])
                continue
            terms = list(counts)
            params: list[Any] = [terms, [float(c) for c in counts.values()], *terms]
            if where is None:
                params += [int(k), int(k)]
            else:
                params += [*where[1], int(k)]
            sql = self.statement(len(terms), None if where is None else where[0])
            rows = self.store.conn.execute(sql, params).fetchall()
            out.append([(int(label), float(score)) for label, score in rows])
        return out
