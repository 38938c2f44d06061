"""How many documents and passages a PostgreSQL collection holds, kept in its `state` row.

`count(*)` over the documents table takes time that grows with the collection (about 50 ms at 1M
passages, for `len()`, and twice that for `info()`, which a server's collection list asks of every
collection: bench/collection_counts.py). So the writes that change them keep two columns of the
one-row `state` table, in the same statements and transactions as the last label and the last
deletion: a snapshot's counts always agree with its rows. A collection made before them gets them,
counted once, the first time a writable munjang opens it; until then, and for readers opened before,
the store answers None and counts rows where it must.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import Counts

if TYPE_CHECKING:
    from .store import PostgresStore  # which imports this module

# The columns a new collection's `state` table is made with (an older one gets them added).
DEFINITIONS = ("documents bigint NOT NULL DEFAULT 0", "passages bigint NOT NULL DEFAULT 0")
COLUMNS = ", ".join(DEFINITIONS)


def has_counts(store: PostgresStore) -> bool:
    """Whether the collection's `state` table keeps the counts."""
    row = store.conn.execute(
        "SELECT 1 FROM information_schema.columns "
        "WHERE table_schema = %s AND table_name = 'state' AND column_name = 'passages'",
        (store.schema,),
    ).fetchone()
    return row is not None


def add_counts(store: PostgresStore) -> None:
    """Inside a transaction under the writer lock: the count columns, filled from the rows."""
    documents = store.t("documents")
    added = ", ".join(f"ADD COLUMN IF NOT EXISTS {definition}" for definition in DEFINITIONS)
    store.conn.execute(f"ALTER TABLE {store.t('state')} {added}")
    store.conn.execute(
        f"UPDATE {store.t('state')} SET documents = (SELECT count(*) FROM {documents} WHERE chunk = 0), "
        f"passages = (SELECT count(*) FROM {documents})"
    )


def read_counts(store: PostgresStore) -> Counts:
    row = store.conn.execute(f"SELECT documents, passages FROM {store.t('state')}").fetchone()
    return Counts(int(row[0]), int(row[1]))


def counted_rows(store: PostgresStore) -> Counts:
    """The documents and passages the rows hold, counted (`integrity_problems` compares them)."""
    row = store.conn.execute(
        f"SELECT count(*) FILTER (WHERE chunk = 0), count(*) FROM {store.t('documents')}"
    ).fetchone()
    return Counts(int(row[0]), int(row[1]))
