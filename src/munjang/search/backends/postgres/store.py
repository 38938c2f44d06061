"""The document store of a collection kept in PostgreSQL with pgvector: the source of truth and the
vector index in one database, for teams whose data already lives there or outgrows one folder.

Each collection is one schema, `munjang_<name>`, with the tables of the embedded store
(`sqlite_store.py`) in PostgreSQL types, made by `postgres_schema.py`:
- `documents`: one row per passage: label (bigserial, never reused), id, chunk (unique with id),
  span_start / span_end, text, metadata (jsonb), text_hash, doc_hash, tokens (jsonb, for BM25), and
  `embedding vector(dim)`: the vector lives beside the passage, so pgvector's HNSW indexes
  (`index="hnsw"`: one per range of labels, `postgres_segments.py`) or an exact scan
  (`index="exact"`) search it in SQL.
- `sources`: the whole text of each document stored as several passages.
- `embeddings`: the embedding cache keyed by (model, text_hash), so a text seen before, even in a
  deleted document, costs no encoding.
- `deletions`: the log of removed labels; `state`: the watermark (last label, last deletion) that
  derived in-process indexes (BM25) catch up from, and the documents and passages stored
  (`postgres_counts.py`), updated in the same transaction as the data.
- `meta`: the collection's configuration.
- `lexical_texts`, `lexical_postings`, `lexical_stats`, `lexical_terms`: BM25's postings, derived
  from the tokens in the same transactions, which PostgreSQL scores itself (`postgres_lexical.py`).
- `sparse_vectors`, `sparse_postings` (a collection with a sparse model): SPLADE's vector cache and
  its postings by label, kept in the same transactions, scored in SQL (`postgres_sparse.py`).

Every write is one transaction; one writer at a time holds a session advisory lock on the schema
name; readers never wait. The public surface matches `DocumentStore`, so `Collection` runs on either.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from typing import Any

import numpy as np

from ..base import (
    CollectionError,
    Counts,
    Document,
    NewRow,
    StoredRow,
    Watermark,
    counts_problems,
    sparse_cache_key,
)
from . import sparse as sparse
from .connect import connect, redact
from .counts import counted_rows, has_counts, read_counts
from .graph_merge import GraphMerger
from .lexical import (
    create_postings,
    has_postings,
    has_tables,
    index_passages,
    postings_problems,
    reindex_postings,
    unindex_documents,
)
from .schema import create_tables, upgrade
from .segments import (
    INDEX_PREFIX,
    OPCLASS,
    add_segments,
    graphs,
    held_segments,
    index_name,
    new_segment,
    segment_meta,
)

NAME = re.compile(r"[A-Za-z0-9_\-]{1,50}")
TABLES = {"meta", "state", "documents", "embeddings", "deletions"}


class PostgresStore:
    """`DocumentStore` over one collection schema in PostgreSQL (see the module docstring)."""

    dialect = "postgres"

    def __init__(self, url: str, name: str, readonly: bool = False) -> None:
        if not NAME.fullmatch(name):
            raise CollectionError(
                f"bad collection name {name!r}: a PostgreSQL collection's name is 1-50 letters, "
                "digits, '_' or '-'"
            )
        self.url, self.name, self.readonly = url, name, readonly
        self.schema = f"munjang_{name}"
        self.path = f"{redact(url)} (collection {name})"
        self.conn = connect(url)
        self._beside: PostgresStore | None = None  # this store on a second connection (`beside`)
        self._beside_lock = threading.Lock()  # server threads may ask for it at once
        self._in_transaction = False
        self._changed = False  # this transaction changed passages (and so their postings)
        self._postings: bool | None = None  # whether the BM25 postings tables exist (asked once)
        self._counts: bool | None = None  # whether `state` keeps the counts (asked once)
        # Merges full HNSW segments in the background (`postgres_graph_merge.py`): asked after the
        # writer's first commit (to go on with one cut off) and after each commit that made a segment.
        self._merger: GraphMerger | None = None
        self._merge_due = not readonly

    # -- naming and set-up -----------------------------------------------------------------------
    def t(self, table: str) -> str:
        """The quoted, schema-qualified name of one of this collection's tables."""
        return f'"{self.schema}".{table}'

    def exists(self) -> bool:
        row = self.conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s", (self.schema,)
        ).fetchone()
        return bool(row and row[0])

    def check_schema(self) -> None:
        rows = self.conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (self.schema,)
        ).fetchall()
        if not rows:
            raise CollectionError(f"{self.path}: no such collection")
        missing = TABLES - {r[0] for r in rows}
        if missing:
            raise CollectionError(
                f"{self.path}: not a munjang collection (missing {', '.join(sorted(missing))})"
            )
        if not self.readonly:
            upgrade(self)
            self._postings = self._counts = None  # asked again: the upgrade may have made them

    def has_postings(self) -> bool:
        """Whether BM25's postings tables exist (a collection made before them gets them when a
        writable munjang first opens it)."""
        if self._postings is None:
            self._postings = has_postings(self)
        return self._postings

    def create_schema(self, config: dict[str, Any]) -> None:
        """Tables, the text-hash index and (index="hnsw") the size of pgvector's HNSW segments, all or
        nothing: each segment's index is made when its first passage is stored."""
        if self.exists():
            raise CollectionError(f"{self.path} already exists: add to it, or choose another name")
        dim, metric = int(config["dim"]), config["metric"]
        if metric not in OPCLASS:
            raise ValueError(f"metric {metric!r} has no pgvector operator class; choose {', '.join(OPCLASS)}")
        segments = segment_meta(config.get("hnsw") or {})  # checked whatever the index
        if config["index"] != "hnsw":
            segments = {}
        with self.transaction():
            self.conn.execute(f'CREATE SCHEMA "{self.schema}"')
            create_tables(self, dim, {**config, **segments})
            create_postings(self)
            if config.get("sparse"):
                sparse.create_sparse(self)
        self._postings = self._counts = True

    @cached_property
    def sparse_key(self) -> str | None:
        """The cache key of the collection's sparse model, whose postings `insert` and `delete`
        keep (None: the collection has no sparse retriever)."""
        config = self.get_meta().get("sparse")
        return sparse_cache_key(str(config["model"])) if config else None

    @cached_property
    def hnsw_segment_size(self) -> int | None:
        """Labels per HNSW segment, fixed when the collection was made (`postgres_segments.py`);
        None: no segments (an exact collection, or one made before them)."""
        size = self.get_meta().get("hnsw_segment_size")
        return None if size is None else int(size)

    def drop(self) -> None:
        """Remove the collection's schema and everything in it (a merge under way is cancelled)."""
        if self._merger is not None:
            self._merger.close(cancel=True)
        self.conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
        self._postings = None

    def close(self) -> None:
        if self._merger is not None:
            self._merger.close()
        if self._beside is not None:
            self._beside.close()
        self.conn.close()

    def beside(self) -> PostgresStore:
        """This store, read-only, on a second connection opened at first use: for the dense search
        that a hybrid search runs on another thread while BM25 runs on `conn`, so both wait on
        PostgreSQL at once. It reads committed data as `conn` does outside a transaction
        (`in_transaction`). Closed with this store."""
        with self._beside_lock:
            if self._beside is None:
                self._beside = PostgresStore(self.url, self.name, readonly=True)
            return self._beside

    @property
    def in_transaction(self) -> bool:
        """Whether a write transaction is open on `conn` (whose uncommitted rows only it sees)."""
        return self._in_transaction

    # -- configuration ---------------------------------------------------------------------------
    def get_meta(self) -> dict[str, Any]:
        rows = self.conn.execute(f"SELECT key, value FROM {self.t('meta')}").fetchall()
        return {key: json.loads(value) for key, value in rows}

    def set_meta(self, values: dict[str, Any]) -> None:
        with self.transaction():
            self.conn.cursor().executemany(
                f"INSERT INTO {self.t('meta')} (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [(k, json.dumps(v, ensure_ascii=False)) for k, v in values.items()],
            )

    def meta_value(self, key: str) -> Any:
        """One config value (None when unset), read alone: cheap enough for every search."""
        row = self.conn.execute(f"SELECT value FROM {self.t('meta')} WHERE key = %s", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def stage_tokens(self, rows: Sequence[tuple[int, str]], restart: bool = False) -> None:
        """Keep the new lexical tokens (JSON) of these passages beside the stored ones, committed,
        until `put_analysis` switches to them (`restart`: forget what was kept before)."""
        staging = self.t("analysis_staging")
        with self.transaction():
            if restart:
                self.conn.execute(f"DROP TABLE IF EXISTS {staging}")
            self.conn.execute(
                f"CREATE TABLE IF NOT EXISTS {staging} (label bigint PRIMARY KEY, tokens jsonb NOT NULL)"
            )
            self.conn.cursor().executemany(
                f"INSERT INTO {staging} (label, tokens) VALUES (%s, %s::jsonb) "
                "ON CONFLICT (label) DO UPDATE SET tokens = excluded.tokens",
                [(int(x), t) for x, t in rows],
            )

    def staged_through(self) -> int:
        """The highest label whose new tokens are kept (0: none), where a re-analysis resumes."""
        if not has_tables(self, ("analysis_staging",)):
            return 0
        row = self.conn.execute(f"SELECT max(label) FROM {self.t('analysis_staging')}").fetchone()
        return int(row[0] or 0)

    def put_analysis(self, meta: dict[str, Any], staged: bool) -> None:
        """Set these config values and, with `staged`, switch every passage to its kept tokens and
        rebuild the BM25 postings from them, in one transaction: readers search the old postings
        until it commits, then the new (`Collection.set_analysis`)."""
        with self.transaction():
            if staged:
                staging = self.t("analysis_staging")
                self.conn.execute(
                    f"UPDATE {self.t('documents')} d SET tokens = s.tokens "
                    f"FROM {staging} s WHERE d.label = s.label"
                )
                self.conn.execute(f"DROP TABLE {staging}")
                if self.has_postings():
                    reindex_postings(self)
            self.conn.cursor().executemany(
                f"INSERT INTO {self.t('meta')} (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [(k, json.dumps(v, ensure_ascii=False)) for k, v in meta.items()],
            )

    # -- transactions and locks ------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One read-write transaction: committed on success, rolled back on any exception; a commit
        that changed passages then vacuums their postings (`vacuum_postings`)."""
        if self.readonly:
            raise CollectionError(f"{self.path} was opened read-only")
        self._in_transaction, changed = True, False
        try:
            with self.conn.transaction():
                yield self.conn
            changed = self._changed
        finally:
            self._in_transaction = self._changed = False
        if changed and self.conn.info.transaction_status.name == "IDLE":  # not inside another one
            self.vacuum_postings()
            if self._merge_due and self.hnsw_segment_size is not None:
                if self._merger is None:
                    self._merger = GraphMerger(self.url, self.schema, self.t)
                self._merger.poke()
                self._merge_due = False

    def vacuum_postings(self) -> None:
        """Mark the postings' changed pages all-visible, so BM25 and sparse queries read postings
        from the index alone: until (auto)vacuum passes, each posting a query sums costs a visit
        to the table too, several times slower. VACUUM reads only the pages changed since its last."""
        kept = {"lexical_postings": self.has_postings(), "sparse_postings": self.sparse_key is not None}
        names = [self.t(name) for name, present in kept.items() if present]
        if names:
            self.conn.execute(f"VACUUM {', '.join(names)}")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads that see one consistent state of the database: a repeatable-read, read-only
        transaction, which psycopg opens with its BEGIN (no statement more); inside a write
        transaction, that transaction."""
        if self._in_transaction or self.conn.info.transaction_status.name != "IDLE":
            yield
            return
        from psycopg import IsolationLevel

        self.conn.isolation_level, self.conn.read_only = IsolationLevel.REPEATABLE_READ, True
        try:
            with self.conn.transaction():
                yield
        finally:
            self.conn.isolation_level = self.conn.read_only = None

    @contextmanager
    def write_lock(self, timeout: float) -> Iterator[None]:
        """One writer per collection across processes and machines: a session advisory lock."""
        if self.readonly:
            raise CollectionError(f"{self.path} was opened read-only")
        deadline = time.monotonic() + timeout
        key = f"munjang:{self.schema}"
        while not self.conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()[0]:
            if time.monotonic() > deadline:
                raise CollectionError(
                    f"{self.path}: another process is writing (lock held longer than {timeout} s)"
                )
            time.sleep(0.05)
        try:
            yield
        finally:
            self.conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))

    # -- reads -------------------------------------------------------------------------------------
    def count(self) -> int:
        """How many documents (not passages) are stored."""
        return (self.counts() or counted_rows(self)).documents

    def passage_count(self) -> int:
        """How many passages (index entries) are stored."""
        return (self.counts() or counted_rows(self)).passages

    def keeps_counts(self) -> bool:
        """Whether the `state` row keeps the counts (a collection made before them gets them when a
        writable munjang first opens it)."""
        if self._counts is None:
            self._counts = has_counts(self)
        return self._counts

    def counts(self) -> Counts | None:
        return read_counts(self) if self.keeps_counts() else None

    def has_passages(self) -> bool:
        """Whether any document is stored as several passages (a partial index answers it)."""
        query = f"SELECT EXISTS (SELECT 1 FROM {self.t('documents')} WHERE chunk > 0)"
        return bool(self.conn.execute(query).fetchone()[0])

    def watermark(self) -> Watermark:
        row = self.conn.execute(f"SELECT last_label, last_deletion FROM {self.t('state')}").fetchone()
        return Watermark(int(row[0]), int(row[1]))

    def existing(self, ids: Sequence[str]) -> dict[str, tuple[int, str]]:
        rows = self.conn.execute(
            f"SELECT id, label, coalesce(doc_hash, text_hash) FROM {self.t('documents')} "
            "WHERE chunk = 0 AND id = ANY(%s)",
            (list(ids),),
        ).fetchall()
        return {r[0]: (int(r[1]), r[2]) for r in rows}

    def cached_hashes(self, model: str, hashes: Iterable[str]) -> set[str]:
        rows = self.conn.execute(
            f"SELECT text_hash FROM {self.t('embeddings')} WHERE model = %s AND text_hash = ANY(%s)",
            (model, list(dict.fromkeys(hashes))),
        ).fetchall()
        return {r[0] for r in rows}

    def documents(self, labels: Sequence[int]) -> dict[int, Document]:
        rows = self.conn.execute(
            f"SELECT label, id, text, metadata, chunk, span_start, span_end FROM {self.t('documents')} "
            "WHERE label = ANY(%s)",
            ([int(x) for x in labels],),
        ).fetchall()
        return {int(r[0]): Document(r[1], r[2], r[3], int(r[0]), int(r[4]), int(r[5]), r[6]) for r in rows}

    def documents_by_id(self, ids: Sequence[str]) -> dict[str, Document]:
        """Whole documents (a passaged one's full text from `sources`), by id."""
        rows = self.conn.execute(
            f"SELECT d.label, d.id, coalesce(s.text, d.text), d.metadata FROM {self.t('documents')} d "
            f"LEFT JOIN {self.t('sources')} s ON s.id = d.id WHERE d.chunk = 0 AND d.id = ANY(%s)",
            (list(ids),),
        ).fetchall()
        return {r[1]: Document(r[1], r[2], r[3], int(r[0])) for r in rows}

    def iter_ids(self, batch: int = 10_000) -> Iterator[str]:
        last = 0
        while True:
            rows = self.conn.execute(
                f"SELECT label, id FROM {self.t('documents')} WHERE label > %s AND chunk = 0 "
                "ORDER BY label LIMIT %s",
                (last, batch),
            ).fetchall()
            if not rows:
                return
            yield from (r[1] for r in rows)
            last = rows[-1][0]

    def passages_after(self, after: int, batch: int = 10_000) -> Iterator[list[StoredRow]]:
        """Every passage with a label above `after`, whole, in label order, `batch` at a time
        (metadata and tokens back as the JSON text they were inserted as)."""
        query = (
            "SELECT d.label, d.id, d.text, d.metadata::text, d.text_hash, d.tokens::text, d.chunk, "
            f"d.span_start, d.span_end, d.doc_hash, s.text FROM {self.t('documents')} d "
            f"LEFT JOIN {self.t('sources')} s ON d.chunk = 0 AND s.id = d.id "
            "WHERE d.label > %s ORDER BY d.label LIMIT %s"
        )
        while True:
            rows = self.conn.execute(query, (after, batch)).fetchall()
            if not rows:
                return
            yield [StoredRow(int(r[0]), NewRow(*r[1:10]), r[10]) for r in rows]
            after = int(rows[-1][0])

    def has_documents(self) -> bool:
        """Whether any document is stored, without counting them all."""
        return bool(self.conn.execute(f"SELECT EXISTS (SELECT 1 FROM {self.t('documents')})").fetchone()[0])

    def count_matching(self, where: str, params: Sequence[Any]) -> int:
        """How many passages satisfy the compiled filter `where` (with its `params`)."""
        query = f"SELECT count(*) FROM {self.t('documents')} WHERE {where}"
        return int(self.conn.execute(query, list(params)).fetchone()[0])

    def labels_matching(self, where: str, params: Sequence[Any]) -> np.ndarray:
        rows = self.conn.execute(
            f"SELECT label FROM {self.t('documents')} WHERE {where} ORDER BY label", list(params)
        ).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def vectors_after(
        self, model: str, dim: int, after: int, batch: int = 20_000
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(labels, vectors) of passages with label > `after`, in label order, in batches (the
        vector is stored in the row, so `model` has no part here)."""
        query = f"SELECT label, embedding FROM {self.t('documents')} WHERE label > %s ORDER BY label LIMIT %s"
        while True:
            rows = self.conn.execute(query, (after, batch)).fetchall()
            if not rows:
                return
            labels = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            vectors = np.zeros((len(rows), dim), dtype=np.float32)
            for i, row in enumerate(rows):
                vectors[i] = _as_array(row[1])
            yield labels, vectors
            after = int(labels[-1])

    def vectors_of(self, model: str, dim: int, labels: np.ndarray) -> np.ndarray:
        """Float vectors of the given labels, in that order."""
        out = np.zeros((len(labels), dim), dtype=np.float32)
        position = {int(label): i for i, label in enumerate(labels)}
        rows = self.conn.execute(
            f"SELECT label, embedding FROM {self.t('documents')} WHERE label = ANY(%s)",
            ([int(x) for x in labels],),
        ).fetchall()
        for label, vector in rows:
            out[position[int(label)]] = _as_array(vector)
        return out

    def tokens_of(self, labels: Sequence[int]) -> dict[int, list[str]]:
        """The stored lexical tokens of these passages (unknown labels left out)."""
        rows = self.conn.execute(
            f"SELECT label, tokens FROM {self.t('documents')} WHERE label = ANY(%s)",
            ([int(x) for x in labels],),
        ).fetchall()
        return {int(r[0]): list(r[1]) for r in rows}

    def tokens(
        self, after: int = 0, upto: int | None = None
    ) -> tuple[np.ndarray, list[str], list[list[str]]]:
        rows = self.conn.execute(
            f"SELECT label, id, tokens FROM {self.t('documents')} WHERE label > %s AND label <= %s "
            "ORDER BY label",
            (after, (1 << 62) if upto is None else upto),
        ).fetchall()
        labels = np.asarray([r[0] for r in rows], dtype=np.int64)
        return labels, [str(r[1]) for r in rows], [list(r[2]) for r in rows]

    def deletions_after(self, seq: int) -> np.ndarray:
        rows = self.conn.execute(
            f"SELECT label FROM {self.t('deletions')} WHERE seq > %s ORDER BY seq", (seq,)
        ).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    # -- writes (inside `transaction()`) ---------------------------------------------------------
    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        data = np.ascontiguousarray(vectors, dtype=np.float32)
        self.conn.cursor().executemany(
            f"INSERT INTO {self.t('embeddings')} (model, text_hash, vector) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            [(model, h, data[i]) for i, h in enumerate(hashes)],
        )

    def insert(self, rows: Sequence[NewRow], model: str) -> None:
        """New documents; each takes its vector from the embedding cache by text hash."""
        if not rows:
            return
        cur = self.conn.cursor()
        cur.executemany(
            f"INSERT INTO {self.t('documents')} (id, chunk, span_start, span_end, text, metadata, text_hash, "
            "doc_hash, tokens, embedding) SELECT %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s::jsonb, e.vector "
            f"FROM {self.t('embeddings')} e WHERE e.model = %s AND e.text_hash = %s RETURNING label",
            [
                (
                    *(r.id, r.chunk, r.start, r.end, r.text, r.metadata),
                    *(r.text_hash, r.doc_hash, r.tokens, model, r.text_hash),
                )
                for r in rows
            ],
            returning=True,
        )
        labels: list[int] = []
        while True:
            labels.extend(row[0] for row in cur.fetchall())
            if not cur.nextset():
                break
        if len(labels) != len(rows):
            missing = len(rows) - len(labels)
            raise CollectionError(f"{self.path}: {missing} documents have no cached embedding")
        documents = sum(1 for r in rows if r.chunk == 0)
        counted = ", documents = documents + %s, passages = passages + %s" if self.keeps_counts() else ""
        cur.execute(
            f"UPDATE {self.t('state')} SET last_label = greatest(last_label, %s){counted}",
            (max(labels), documents, len(labels)) if counted else (max(labels),),
        )
        size = self.hnsw_segment_size
        if size is not None:
            add_segments(self, max(labels), size)
            self._merge_due = self._merge_due or new_segment(min(labels), max(labels), size)
        self._changed = True
        if self.has_postings():
            index_passages(self, min(labels), max(labels))
        if self.sparse_key is not None:
            sparse.index_sparse(self, self.sparse_key, min(labels), max(labels))

    def put_sources(self, sources: Sequence[tuple[str, str]]) -> None:
        """The whole text of documents stored as several passages: (id, text)."""
        if sources:
            self.conn.cursor().executemany(
                f"INSERT INTO {self.t('sources')} (id, text) VALUES (%s, %s) "
                "ON CONFLICT (id) DO UPDATE SET text = excluded.text",
                list(sources),
            )

    def update_metadata(self, updates: Sequence[tuple[str, str]]) -> None:
        if updates:
            self.conn.cursor().executemany(
                f"UPDATE {self.t('documents')} SET metadata = %s::jsonb WHERE id = %s",
                [(m, i) for i, m in updates],
            )

    def delete(self, ids: Sequence[str]) -> int:
        """Delete documents (every passage of each); returns how many documents existed."""
        self._changed = True
        if self.has_postings():
            unindex_documents(self, ids)
        if self.sparse_key is not None:
            sparse.unindex_sparse(self, self.sparse_key, ids)
        rows = self.conn.execute(
            f"DELETE FROM {self.t('documents')} WHERE id = ANY(%s) RETURNING label, chunk", (list(ids),)
        ).fetchall()
        self.conn.execute(f"DELETE FROM {self.t('sources')} WHERE id = ANY(%s)", (list(ids),))
        labels = sorted(int(r[0]) for r in rows)
        found = sum(1 for r in rows if r[1] == 0)
        if labels:
            self.conn.cursor().executemany(
                f"INSERT INTO {self.t('deletions')} (label) VALUES (%s)", [(x,) for x in labels]
            )
            counted = ", documents = documents - %s, passages = passages - %s" if self.keeps_counts() else ""
            self.conn.execute(
                f"UPDATE {self.t('state')} SET last_deletion = "
                f"(SELECT coalesce(max(seq), 0) FROM {self.t('deletions')}){counted}",
                (found, len(labels)) if counted else (),
            )
        return found

    def prune_embeddings(self, model: str) -> int:
        cur = self.conn.execute(
            f"DELETE FROM {self.t('embeddings')} WHERE model != %s OR text_hash NOT IN "
            f"(SELECT text_hash FROM {self.t('documents')})",
            (model,),
        )
        return int(cur.rowcount)

    def integrity_problems(self, model: str) -> list[str]:
        problems: list[str] = []
        invalid = self.conn.execute(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname LIKE 'documents\\_embedding\\_hnsw%%' AND NOT i.indisvalid "
            "ORDER BY c.relname",
            (self.schema,),
        ).fetchall()
        # A merge's index is invalid while it is built, and one cut off waits for the next writer:
        # only an index a search walks is a problem (`postgres_graph_merge.py`).
        walked, size = {INDEX_PREFIX}, self.hnsw_segment_size
        if size is not None:
            merged = [(int(first), int(count)) for first, count in self.get_meta().get("hnsw_merged") or []]
            layout = graphs(merged, held_segments(self.watermark().label, size))
            walked |= {index_name(graph) for graph in layout}
        problems += [
            f"the HNSW index {name} is invalid (REINDEX it)" for (name,) in invalid if name in walked
        ]
        if self.keeps_counts():
            problems += counts_problems(read_counts(self), counted_rows(self))
        orphans = self.conn.execute(
            f"SELECT count(*) FROM {self.t('documents')} d LEFT JOIN {self.t('embeddings')} e "
            "ON e.model = %s AND e.text_hash = d.text_hash WHERE e.vector IS NULL",
            (model,),
        ).fetchone()[0]
        if orphans:
            problems.append(f"{orphans} documents have no embedding for {model!r}")
        if self.has_postings():
            problems += postings_problems(self)
        return problems

    # -- sparse vectors (a collection with a sparse model: `Backend.retrievers`) -------------------
    def cached_sparse(self, model: str, hashes: Iterable[str]) -> set[str]:
        return sparse.cached_sparse(self, model, hashes)

    def put_sparse(
        self, model: str, hashes: Sequence[str], rows: Sequence[tuple[np.ndarray, np.ndarray]]
    ) -> None:
        sparse.put_sparse(self, model, hashes, rows)

    def sparse_after(
        self, model: str, after: int, batch: int = 20_000
    ) -> Iterator[tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]]:
        return sparse.sparse_after(self, model, after, batch)

    def database_bytes(self) -> int:
        row = self.conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (self.schema,),
        ).fetchone()
        return int(row[0])


def _as_array(vector: Any) -> np.ndarray:
    """A stored embedding as numpy: pgvector's psycopg loader gives a `Vector` (0.3 and later) or,
    in the older releases `pgvector>=0.2` admits, a numpy array."""
    return vector if isinstance(vector, np.ndarray) else np.asarray(vector.to_numpy(), dtype=np.float32)
