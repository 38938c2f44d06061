"""The document store of a collection: one SQLite database, the source of truth.

Tables:
- `documents`: label (INTEGER PRIMARY KEY AUTOINCREMENT, never reused, the id every index uses),
  id (the user's unique text id), text, metadata (JSON), text_hash, tokens (JSON, for BM25).
- `embeddings`: the embedding cache, keyed by (model, text_hash). A document's vector is found by
  its text hash, so re-adding a text the model has seen costs no encoding, and deleting a document
  keeps its vector for a later re-add.
- `deletions`: a log of removed labels, numbered by an AUTOINCREMENT sequence.
- `meta`: the collection's configuration (JSON values).

Indexes (HNSW, BM25, the in-memory exact matrix) are derived data. Each records the highest label
and deletion sequence it has applied; catching up is "add labels above it, remove deletions after
it", so an index saved at any earlier moment, or none at all, is brought up to date from here.

The database runs in WAL mode with synchronous=FULL: a committed transaction survives a killed
process (and a power cut), readers never block the writer, and the writer never blocks readers.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MunjangError

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    label INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    text_hash TEXT NOT NULL,
    tokens TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS deletions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    label INTEGER NOT NULL
);
"""


class CollectionError(MunjangError):
    """A collection folder is missing, corrupt, locked, or asked to do something it cannot."""


def text_hash(text: str) -> str:
    """The embedding-cache key of a text (SHA-256, hex)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Document:
    """A stored document: the user's id, its text and metadata, and its internal label."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    label: int = -1


@dataclass(frozen=True)
class Watermark:
    """How far an index has caught up: the highest label added and deletion sequence applied."""

    label: int = 0
    deletion: int = 0


@dataclass(frozen=True)
class NewRow:
    """A document to insert: text, metadata JSON, hash and lexical tokens."""

    id: str
    text: str
    metadata: str
    text_hash: str
    tokens: str


class DocumentStore:
    """Thin, typed access to the collection database. One connection per store object."""

    dialect = "sqlite"

    def __init__(self, path: Path, create: bool = False, readonly: bool = False) -> None:
        self.path = path
        if not create and not path.is_file():
            raise CollectionError(f"{path.parent}: not a collection (no {path.name})")
        uri = f"file:{path}?mode={'ro' if readonly else 'rwc'}"
        try:
            self.conn = sqlite3.connect(uri, uri=True, timeout=60.0, isolation_level=None)
            self.conn.execute("PRAGMA busy_timeout = 60000")
            if not readonly:
                self.conn.execute("PRAGMA journal_mode = WAL")
                self.conn.execute("PRAGMA synchronous = FULL")
            if create:
                self.conn.executescript(_SCHEMA)
            self._check_schema()
        except sqlite3.DatabaseError as e:
            raise CollectionError(f"{path}: cannot open the collection database ({e})") from None

    def _check_schema(self) -> None:
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = {"meta", "documents", "embeddings", "deletions"} - tables
        if missing:
            raise CollectionError(
                f"{self.path}: not a munjang collection (missing {', '.join(sorted(missing))})"
            )

    def close(self) -> None:
        self.conn.close()

    # -- configuration ---------------------------------------------------------------------------
    def get_meta(self) -> dict[str, Any]:
        return {key: json.loads(value) for key, value in self.conn.execute("SELECT key, value FROM meta")}

    def set_meta(self, values: dict[str, Any]) -> None:
        with self.transaction():
            self.conn.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [(k, json.dumps(v, ensure_ascii=False)) for k, v in values.items()],
            )

    # -- transactions ------------------------------------------------------------------------------
    def transaction(self) -> _Transaction:
        return _Transaction(self.conn)

    # -- reads ---------------------------------------------------------------------------------------
    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads that see one consistent state of the database (one read transaction)."""
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM documents").fetchone()[0])

    def watermark(self) -> Watermark:
        """The store's current high-water marks (AUTOINCREMENT counters never go back)."""
        seqs = dict(self.conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
        return Watermark(int(seqs.get("documents", 0)), int(seqs.get("deletions", 0)))

    def existing(self, ids: Sequence[str]) -> dict[str, tuple[int, str]]:
        """For ids already stored: id -> (label, text_hash)."""
        found: dict[str, tuple[int, str]] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ", ".join("?" * len(part))
            rows = self.conn.execute(
                f"SELECT id, label, text_hash FROM documents WHERE id IN ({marks})", part
            ).fetchall()
            found.update({r[0]: (int(r[1]), r[2]) for r in rows})
        return found

    def cached_hashes(self, model: str, hashes: Iterable[str]) -> set[str]:
        wanted = list(dict.fromkeys(hashes))
        found: set[str] = set()
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ", ".join("?" * len(part))
            rows = self.conn.execute(
                f"SELECT text_hash FROM embeddings WHERE model = ? AND text_hash IN ({marks})", [model, *part]
            )
            found.update(r[0] for r in rows)
        return found

    def documents(self, labels: Sequence[int]) -> dict[int, Document]:
        out: dict[int, Document] = {}
        for start in range(0, len(labels), 500):
            part = [int(x) for x in labels[start : start + 500]]
            marks = ", ".join("?" * len(part))
            for label, doc_id, text, metadata in self.conn.execute(
                f"SELECT label, id, text, metadata FROM documents WHERE label IN ({marks})", part
            ):
                out[int(label)] = Document(doc_id, text, json.loads(metadata), int(label))
        return out

    def documents_by_id(self, ids: Sequence[str]) -> dict[str, Document]:
        labels = [label for label, _ in self.existing(ids).values()]
        return {doc.id: doc for doc in self.documents(labels).values()}

    def iter_ids(self, batch: int = 10_000) -> Iterator[str]:
        last = 0
        while True:
            rows = self.conn.execute(
                "SELECT label, id FROM documents WHERE label > ? ORDER BY label LIMIT ?", (last, batch)
            ).fetchall()
            if not rows:
                return
            yield from (r[1] for r in rows)
            last = rows[-1][0]

    def labels_matching(self, where: str, params: Sequence[Any]) -> np.ndarray:
        rows = self.conn.execute(f"SELECT label FROM documents WHERE {where} ORDER BY label", list(params))
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    def vectors_after(
        self, model: str, dim: int, after: int, batch: int = 20_000
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(labels, vectors) of documents with label > `after`, in label order, in batches."""
        while True:
            rows = self.conn.execute(
                "SELECT d.label, e.vector FROM documents d LEFT JOIN embeddings e "
                "ON e.model = ? AND e.text_hash = d.text_hash WHERE d.label > ? ORDER BY d.label LIMIT ?",
                (model, after, batch),
            ).fetchall()
            if not rows:
                return
            missing = [r[0] for r in rows if r[1] is None]
            if missing:
                raise CollectionError(
                    f"{self.path}: documents without an embedding for {model!r} (labels {missing[:5]})"
                )
            labels = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
            yield labels, vectors
            after = int(labels[-1])

    def vectors_of(self, model: str, dim: int, labels: np.ndarray) -> np.ndarray:
        """Float vectors of the given labels, in that order (for rescoring and filtered search)."""
        out = np.zeros((len(labels), dim), dtype=np.float32)
        position = {int(label): i for i, label in enumerate(labels)}
        for start in range(0, len(labels), 500):
            part = [int(x) for x in labels[start : start + 500]]
            marks = ", ".join("?" * len(part))
            for label, vector in self.conn.execute(
                "SELECT d.label, e.vector FROM documents d JOIN embeddings e "
                f"ON e.model = ? AND e.text_hash = d.text_hash WHERE d.label IN ({marks})",
                [model, *part],
            ):
                out[position[int(label)]] = np.frombuffer(vector, dtype=np.float32)
        return out

    def tokens_by_id(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """The stored lexical tokens of these documents (unknown ids left out)."""
        out: dict[str, list[str]] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ", ".join("?" * len(part))
            for doc_id, toks in self.conn.execute(
                f"SELECT id, tokens FROM documents WHERE id IN ({marks})", part
            ):
                out[doc_id] = json.loads(toks)
        return out

    def tokens(self) -> tuple[np.ndarray, list[list[str]]]:
        """(labels, tokens) of every document, in label order, for rebuilding BM25."""
        labels: list[int] = []
        tokens: list[list[str]] = []
        for label, toks in self.conn.execute("SELECT label, tokens FROM documents ORDER BY label"):
            labels.append(label)
            tokens.append(json.loads(toks))
        return np.asarray(labels, dtype=np.int64), tokens

    def deletions_after(self, seq: int) -> np.ndarray:
        rows = self.conn.execute("SELECT label FROM deletions WHERE seq > ? ORDER BY seq", (seq,))
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    # -- writes (call inside a transaction) -----------------------------------------------------------
    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        data = np.ascontiguousarray(vectors, dtype=np.float32)
        self.conn.executemany(
            "INSERT OR IGNORE INTO embeddings (model, text_hash, vector) VALUES (?, ?, ?)",
            [(model, h, data[i].tobytes()) for i, h in enumerate(hashes)],
        )

    def insert(self, rows: Sequence[NewRow], model: str = "") -> None:
        """New documents (their vectors are joined from the embedding cache when read, so `model`
        is not needed here; the PostgreSQL store copies the vector into the row)."""
        self.conn.executemany(
            "INSERT INTO documents (id, text, metadata, text_hash, tokens) VALUES (?, ?, ?, ?, ?)",
            [(r.id, r.text, r.metadata, r.text_hash, r.tokens) for r in rows],
        )

    def update_metadata(self, updates: Sequence[tuple[str, str]]) -> None:
        self.conn.executemany("UPDATE documents SET metadata = ? WHERE id = ?", [(m, i) for i, m in updates])

    def delete(self, ids: Sequence[str]) -> int:
        found = self.existing(ids)
        labels = sorted(label for label, _ in found.values())
        self.conn.executemany("DELETE FROM documents WHERE label = ?", [(x,) for x in labels])
        self.conn.executemany("INSERT INTO deletions (label) VALUES (?)", [(x,) for x in labels])
        return len(labels)

    def prune_embeddings(self, model: str) -> int:
        """Drop cached vectors no document uses (for any model but `model`, all of them)."""
        cur = self.conn.execute(
            "DELETE FROM embeddings WHERE model != ? OR text_hash NOT IN (SELECT text_hash FROM documents)",
            (model,),
        )
        return int(cur.rowcount)

    def integrity_problems(self, model: str) -> list[str]:
        problems = [r[0] for r in self.conn.execute("PRAGMA integrity_check") if r[0] != "ok"]
        orphans = self.conn.execute(
            "SELECT count(*) FROM documents d LEFT JOIN embeddings e "
            "ON e.model = ? AND e.text_hash = d.text_hash WHERE e.vector IS NULL",
            (model,),
        ).fetchone()[0]
        if orphans:
            problems.append(f"{orphans} documents have no embedding for {model!r}")
        return problems


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (KeyboardInterrupt included)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            self.conn.execute("ROLLBACK")
