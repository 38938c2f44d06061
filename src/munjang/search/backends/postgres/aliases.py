"""The aliases of a PostgreSQL database's collections: rows of `munjang.aliases` (a schema of its
own, which no collection's `munjang_<name>` schema can be).

A switch is one transaction: it takes a transaction-scoped advisory lock (changes queue behind one
another), checks that the alias is no collection's name and that the target is a collection, and
upserts the row; a reader's one SELECT sees the old target or the new one, never half a change. The
table is made by the first alias set; a database without it has no aliases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..base import CollectionError, CollectionNotFoundError, check_alias_names
from .connect import connect, redact
from .store import NAME

TABLE = "munjang.aliases"
LOCK_KEY = "munjang:aliases"
# A collection is a schema munjang_<name> holding its meta table (`schema.create_tables`).
IS_COLLECTION = (
    "SELECT 1 FROM information_schema.tables "
    "WHERE table_schema = 'munjang_' || %s::text AND table_name = 'meta'"
)


def _has_table(conn: Any) -> bool:
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (TABLE,)).fetchone()[0]


class PostgresAliases:
    """The aliases kept in the database at `url`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = redact(url)

    def read(self) -> dict[str, str]:
        conn = connect(self.url)
        try:
            if not _has_table(conn):
                return {}
            return dict(conn.execute(f"SELECT alias, target FROM {TABLE} ORDER BY alias").fetchall())
        finally:
            conn.close()

    def set(self, alias: str, target: str) -> str | None:
        check_alias_names(self.where, alias, target)
        for word in (alias, target):
            if not NAME.fullmatch(word):
                raise CollectionError(f"{word!r}: a name here is 1-50 letters, digits, '_' or '-'")
        conn = connect(self.url)
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (LOCK_KEY,))
                if conn.execute(IS_COLLECTION, (alias,)).fetchone() is not None:
                    raise CollectionError(
                        f"{alias!r} is a collection in {self.where}: an alias cannot take its name"
                    )
                if conn.execute(IS_COLLECTION, (target,)).fetchone() is None:
                    raise CollectionNotFoundError(
                        f"{self.where}: no collection {target!r} to point {alias!r} at"
                    )
                conn.execute("CREATE SCHEMA IF NOT EXISTS munjang")
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {TABLE} (alias text PRIMARY KEY, target text NOT NULL, "
                    "changed timestamptz NOT NULL DEFAULT now())"
                )
                row = conn.execute(f"SELECT target FROM {TABLE} WHERE alias = %s", (alias,)).fetchone()
                conn.execute(
                    f"INSERT INTO {TABLE} (alias, target) VALUES (%s, %s) ON CONFLICT (alias) "
                    "DO UPDATE SET target = excluded.target, changed = now()",
                    (alias, target),
                )
        finally:
            conn.close()
        return None if row is None else str(row[0])

    def remove(self, alias: str) -> bool:
        conn = connect(self.url)
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (LOCK_KEY,))
                if not _has_table(conn):
                    return False
                return conn.execute(f"DELETE FROM {TABLE} WHERE alias = %s", (alias,)).rowcount > 0
        finally:
            conn.close()

    def resolve(self, name: str) -> str:
        conn = connect(self.url)
        try:
            if not _has_table(conn) or conn.execute(IS_COLLECTION, (name,)).fetchone() is not None:
                return name
            row = conn.execute(f"SELECT target FROM {TABLE} WHERE alias = %s", (name,)).fetchone()
        finally:
            conn.close()
        return name if row is None else str(row[0])


if TYPE_CHECKING:
    from ..base import Aliases

    _CONTRACT: type[Aliases] = PostgresAliases  # mypy checks the class against the contract
