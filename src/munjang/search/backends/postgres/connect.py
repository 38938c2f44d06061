"""Connecting to PostgreSQL for a collection: the URL (redacted for messages), a
connection with pgvector registered, the collections a database holds, and which errors are the
database's. The store itself is `store.py`."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ...._util.extras import install_hint
from ..base import CollectionError


def redact(url: str) -> str:
    """The URL without its password, for messages and `info()`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


def connect(url: str) -> Any:
    """A connection to `url` with pgvector registered (the extension created if missing)."""
    try:
        import psycopg
        from pgvector.psycopg import register_vector
    except ImportError:
        raise CollectionError(
            f"PostgreSQL collections need psycopg and pgvector: {install_hint('psycopg')}"
        ) from None
    try:
        conn = psycopg.connect(url, autocommit=True)
    except psycopg.Error as e:
        raise CollectionError(f"cannot connect to {redact(url)}: {str(e).strip()}") from None
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as e:
        conn.close()
        raise CollectionError(
            f"{redact(url)}: the pgvector extension is not available ({str(e).strip()}); "
            "install pgvector on the server or ask its administrator to CREATE EXTENSION vector"
        ) from None
    register_vector(conn)
    return conn


def list_collections(url: str) -> list[str]:
    """Names of the munjang collections in the database at `url`."""
    conn = connect(url)
    try:
        rows = conn.execute(
            "SELECT substr(schema_name, 9) FROM information_schema.schemata "
            "WHERE schema_name LIKE 'munjang\\_%' ORDER BY schema_name"
        ).fetchall()
    finally:
        conn.close()
    return [r[0] for r in rows]


def is_database_error(error: BaseException) -> bool:
    """True for an error raised by psycopg (the server refused, failed or went away)."""
    return type(error).__module__.partition(".")[0] == "psycopg"
