"""A PostgreSQL collection's core tables and indexes (BM25's and SPLADE's are their own modules'),
and bringing a collection an older munjang wrote to this schema: each step checks for what it adds
and runs once, in one transaction, the first time a writable munjang opens the collection (a reader
never changes a schema)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..base import SCHEMA_VERSION
from .counts import COLUMNS, add_counts, has_counts
from .lexical import create_postings, create_terms, has_postings, has_terms

if TYPE_CHECKING:
    from .store import PostgresStore  # which imports this module

# Equality filters compile to jsonb containment (see filters.py), which this index answers.
METADATA_INDEX = (
    "CREATE INDEX IF NOT EXISTS documents_metadata_gin ON {documents} USING gin (metadata jsonb_path_ops)"
)
# Answers "is any document stored as several passages?" without a scan.
PASSAGES_INDEX = "CREATE INDEX documents_passages ON {documents} (id) WHERE chunk > 0"


def create_tables(store: PostgresStore, dim: int, meta: dict[str, Any]) -> None:
    """The collection's core tables in its new schema, `meta` stored (inside the creating transaction)."""
    execute = store.conn.execute
    execute(f"CREATE TABLE {store.t('meta')} (key text PRIMARY KEY, value text NOT NULL)")
    execute(
        f"CREATE TABLE {store.t('state')} (one boolean PRIMARY KEY DEFAULT true CHECK (one), "
        f"last_label bigint NOT NULL DEFAULT 0, last_deletion bigint NOT NULL DEFAULT 0, {COLUMNS})"
    )
    execute(f"INSERT INTO {store.t('state')} DEFAULT VALUES")
    execute(
        f"CREATE TABLE {store.t('documents')} (label bigserial PRIMARY KEY, id text NOT NULL, "
        "chunk integer NOT NULL DEFAULT 0, span_start integer NOT NULL DEFAULT 0, span_end integer, "
        "text text NOT NULL, metadata jsonb NOT NULL DEFAULT '{}', text_hash text NOT NULL, "
        f"doc_hash text, tokens jsonb NOT NULL DEFAULT '[]', embedding vector({dim}) NOT NULL, "
        "UNIQUE (id, chunk))"
    )
    execute(f"CREATE TABLE {store.t('sources')} (id text PRIMARY KEY, text text NOT NULL)")
    execute(PASSAGES_INDEX.format(documents=store.t("documents")))
    execute(f"CREATE INDEX ON {store.t('documents')} (text_hash)")
    execute(METADATA_INDEX.format(documents=store.t("documents")))
    execute(
        f"CREATE TABLE {store.t('embeddings')} (model text NOT NULL, text_hash text NOT NULL, "
        f"vector vector({dim}) NOT NULL, PRIMARY KEY (model, text_hash))"
    )
    execute(f"CREATE TABLE {store.t('deletions')} (seq bigserial PRIMARY KEY, label bigint NOT NULL)")
    store.conn.cursor().executemany(
        f"INSERT INTO {store.t('meta')} (key, value) VALUES (%s, %s)",
        [(k, json.dumps(v, ensure_ascii=False)) for k, v in meta.items()],
    )


def upgrade(store: PostgresStore) -> None:
    """Every step an older collection may lack, in the order they were added to munjang."""
    add_metadata_index(store)
    add_passages(store)
    add_postings(store)
    if not has_counts(store):
        with store.write_lock(timeout=600.0), store.transaction():
            add_counts(store)


def add_metadata_index(store: PostgresStore) -> None:
    """Give a collection created before the metadata index existed its index."""
    found = store.conn.execute(
        "SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname = 'documents_metadata_gin'",
        (store.schema,),
    ).fetchone()
    if found is None:
        with store.transaction():
            store.conn.execute(METADATA_INDEX.format(documents=store.t("documents")))


def add_passages(store: PostgresStore) -> None:
    """Schema version 1 had one row per document with a unique id; passages need (id, chunk)."""
    row = store.conn.execute(f"SELECT value FROM {store.t('meta')} WHERE key = 'schema_version'").fetchone()
    if row is None or json.loads(row[0]) != 1:
        return
    documents = store.t("documents")
    with store.transaction():
        store.conn.execute(f"ALTER TABLE {documents} DROP CONSTRAINT IF EXISTS documents_id_key")
        store.conn.execute(
            f"ALTER TABLE {documents} ADD COLUMN chunk integer NOT NULL DEFAULT 0, "
            "ADD COLUMN span_start integer NOT NULL DEFAULT 0, ADD COLUMN span_end integer, "
            "ADD COLUMN doc_hash text, ADD UNIQUE (id, chunk)"
        )
        store.conn.execute(f"CREATE TABLE {store.t('sources')} (id text PRIMARY KEY, text text NOT NULL)")
        store.conn.execute(PASSAGES_INDEX.format(documents=documents))
        store.conn.execute(
            f"UPDATE {store.t('meta')} SET value = %s WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
        )


def add_postings(store: PostgresStore) -> None:
    """Give a collection created before BM25 ran in SQL its postings, from its stored tokens, and
    one created before the terms table that table, from its postings, under the writer lock (no
    write can slip between)."""
    if has_postings(store) and has_terms(store):
        return
    with store.write_lock(timeout=600.0):
        if not has_postings(store):
            with store.transaction():
                create_postings(store)
        elif not has_terms(store):
            with store.transaction():
                create_terms(store)
