"""The document store of a collection: one SQLite database, the source of truth.

Tables:
- `documents`: one row per passage, the unit every index holds. label (INTEGER PRIMARY KEY
  AUTOINCREMENT, never reused, the id every index uses), id (the user's document id), chunk (0, 1,
  ... within the document; UNIQUE with id), span_start / span_end (the passage's character offsets in
  the document; span_end NULL: the whole text), text (the passage), metadata (JSON, the document's,
  on every passage so filters need no join), text_hash (of what was encoded: the embedding-cache
  key), doc_hash (of the whole document and its context, to tell a changed document; NULL: equal to
  text_hash), tokens (JSON, for BM25). A document short enough for the model is one passage.
- `sources`: the whole text of each document stored as several passages.
- `embeddings`: the embedding cache, keyed by (model, text_hash). A document's vector is found by
  its text hash, so re-adding a text the model has seen costs no encoding, and deleting a document
  keeps its vector for a later re-add.
- `deletions`: a log of removed labels, numbered by an AUTOINCREMENT sequence.
- `sparse_vectors`: the sparse (SPLADE) vector cache of a collection with a sparse retriever, keyed
  like `embeddings`: token ids (uint32) and weights (float32), little-endian.
- `token_vectors`: the multi-vector (ColBERT) cache of a collection with a multi-vector retriever,
  keyed the same way: a (n_tokens, dim) float16 matrix per passage (`search/token_index.py`).
- `meta`: the collection's configuration (JSON values).
- `counts`: one row, the documents and passages stored, kept by the writes that change them, so
  `len()` and `info()` read two numbers instead of counting rows.

Indexes (HNSW, BM25, the in-memory exact matrix) are derived data. Each records the highest label
and deletion sequence it has applied; catching up is "add labels above it, remove deletions after
it", so an index saved at any earlier moment, or none at all, is brought up to date from here.

The database runs in WAL mode with synchronous=FULL: a committed transaction survives a killed
process (and a power cut), readers never block the writer, and the writer never blocks readers.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..base import (
    SCHEMA_VERSION,
    CollectionError,
    Counts,
    Document,
    NewRow,
    ReadOnlyError,
    StoredRow,
    Watermark,
    counts_problems,
)
from ..disk_faults import Transaction, full_disk, storage_fault, writable_media

# The passages table, shared by a new collection's schema and the version 1 -> 2 migration.
_DOCUMENTS_COLUMNS = """
    label INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    chunk INTEGER NOT NULL DEFAULT 0,
    span_start INTEGER NOT NULL DEFAULT 0,
    span_end INTEGER,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    text_hash TEXT NOT NULL,
    doc_hash TEXT,
    tokens TEXT NOT NULL DEFAULT '[]',
    UNIQUE (id, chunk)
"""

# The vector caches of the extra retrievers (sparse, multi-vector); also created in an older folder.
_CACHES = """
CREATE TABLE IF NOT EXISTS sparse_vectors (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    ids BLOB NOT NULL,
    weights BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS token_vectors (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    n_tokens INTEGER NOT NULL,
    dim INTEGER NOT NULL,
    vectors BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID;
"""

# The kept counts; also made in an older folder by its first writable open, counted there once.
_COUNTS = """
CREATE TABLE IF NOT EXISTS counts (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    documents INTEGER NOT NULL,
    passages INTEGER NOT NULL
);
INSERT OR IGNORE INTO counts (one, documents, passages)
    SELECT 1, coalesce(sum(chunk = 0), 0), count(*) FROM documents;
"""

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents ({_DOCUMENTS_COLUMNS});
CREATE TABLE IF NOT EXISTS sources (id TEXT PRIMARY KEY, text TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS documents_passages ON documents (id) WHERE chunk > 0;
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
{_CACHES}
{_COUNTS}
"""

# Version 1 held one row per document with a UNIQUE id; SQLite cannot drop that constraint in place,
# so the table is rebuilt with labels kept and the AUTOINCREMENT counter restored (labels are never
# reused, or an index would mistake a new passage for a deleted one).
_MIGRATE_1_TO_2 = f"""
CREATE TABLE documents_v2 ({_DOCUMENTS_COLUMNS});
INSERT INTO documents_v2 (label, id, text, metadata, text_hash, tokens)
    SELECT label, id, text, metadata, text_hash, tokens FROM documents;
DROP TABLE documents;
ALTER TABLE documents_v2 RENAME TO documents;
CREATE TABLE IF NOT EXISTS sources (id TEXT PRIMARY KEY, text TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS documents_passages ON documents (id) WHERE chunk > 0;
"""


def _document(row: Sequence[Any]) -> Document:
    """A Document from (label, id, text, metadata, chunk, span_start, span_end)."""
    label, doc_id, text, metadata, chunk, start, end = row
    return Document(doc_id, text, json.loads(metadata), int(label), int(chunk), int(start), end)


class DocumentStore:
    """Thin, typed access to the collection database. One connection per store object."""

    dialect = "sqlite"

    def __init__(self, path: Path, create: bool = False, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        if not create and not path.is_file():
            raise CollectionError(f"{path.parent}: not a collection (no {path.name})")
        if not create and not readonly and not writable_media(path.parent):
            raise ReadOnlyError(f"{path.parent} is on read-only media: open it read-only to search it")
        try:
            self.conn = self._connect(path, create, readonly)
            if create:
                self.conn.executescript(_SCHEMA)
            self._check_schema()
            if not readonly and not create:
                self._upgrade()
                self._add_counts()
            self._counted = self._has_table("counts")
        except sqlite3.DatabaseError as e:
            fault = storage_fault(e, path.parent) or full_disk(e, path.parent)
            if fault is not None:
                raise fault from None
            raise CollectionError(f"{path}: cannot open the collection database ({e})") from None

    @staticmethod
    def _connect(path: Path, create: bool, readonly: bool) -> sqlite3.Connection:
        """A connection in WAL mode for writers. A reader on read-only media, where SQLite cannot
        make the WAL's shared-memory file, opens the file as immutable (no locks, no WAL): reads
        then work whatever files an earlier process left beside the database."""
        modes = ["ro"] if readonly else ["rwc"]
        if readonly and not writable_media(path.parent):
            modes.append("ro&immutable=1")
        for i, mode in enumerate(modes):
            conn = sqlite3.connect(f"file:{path}?mode={mode}", uri=True, timeout=60.0, isolation_level=None)
            try:
                conn.execute("PRAGMA busy_timeout = 60000")
                if not readonly:
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("PRAGMA synchronous = FULL")
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn
            except sqlite3.DatabaseError:
                conn.close()
                if i == len(modes) - 1:
                    raise
        raise AssertionError("unreachable")

    def _check_schema(self) -> None:
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = {"meta", "documents", "embeddings", "deletions"} - tables
        if missing:
            raise CollectionError(
                f"{self.path}: not a munjang collection (missing {', '.join(sorted(missing))})"
            )

    def _has_table(self, name: str) -> bool:
        query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        return self.conn.execute(query, (name,)).fetchone() is not None

    def _add_counts(self) -> None:
        """Give a folder made before the kept counts its `counts` row, counted once in a write
        transaction (no write can slip between the count and the row)."""
        if self._has_table("counts") and self.conn.execute("SELECT 1 FROM counts").fetchone():
            return
        with self.transaction():
            for statement in _COUNTS.split(";"):
                if statement.strip():
                    self.conn.execute(statement)

    def _upgrade(self) -> None:
        """Bring a collection written by an older munjang to this schema, in one transaction."""
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"sparse_vectors", "token_vectors"} <= tables:  # caches added after the folder was made
            self.conn.executescript(_CACHES)
        if self._schema_version() != 1:
            return
        # Read again inside the write transaction: a second writer opening the folder at the same
        # moment waits, then finds it upgraded, rather than migrating it twice.
        with self.transaction():
            if self._schema_version() != 1:
                return
            seq = self.conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'documents'").fetchone()
            for statement in _MIGRATE_1_TO_2.split(";"):
                if statement.strip():
                    self.conn.execute(statement)
            self.conn.execute("DELETE FROM sqlite_sequence WHERE name = 'documents'")
            self.conn.execute(
                "INSERT INTO sqlite_sequence (name, seq) VALUES ('documents', ?)", (seq[0] if seq else 0,)
            )
            self.conn.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
            )

    def _schema_version(self) -> Any:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return None if row is None else json.loads(row[0])

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

    def meta_value(self, key: str) -> Any:
        """One config value (None when unset), read alone: cheap enough for every search."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def stage_tokens(self, rows: Sequence[tuple[int, str]], restart: bool = False) -> None:
        """Keep the new lexical tokens (JSON) of these passages beside the stored ones, committed,
        until `put_analysis` switches to them (`restart`: forget what was kept before)."""
        with self.transaction():
            if restart:
                self.conn.execute("DROP TABLE IF EXISTS analysis_staging")
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS analysis_staging "
                "(label INTEGER PRIMARY KEY, tokens TEXT NOT NULL)"
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO analysis_staging (label, tokens) VALUES (?, ?)",
                [(int(x), t) for x, t in rows],
            )

    def staged_through(self) -> int:
        """The highest label whose new tokens are kept (0: none), where a re-analysis resumes."""
        try:
            row = self.conn.execute("SELECT max(label) FROM analysis_staging").fetchone()
        except sqlite3.OperationalError:  # no re-analysis under way
            return 0
        return int(row[0] or 0)

    def put_analysis(self, meta: dict[str, Any], staged: bool) -> None:
        """Set these config values and, with `staged`, switch every passage to its kept tokens, in one
        transaction: a reader sees the old analysis or the new, never a mix (`Collection.set_analysis`)."""
        with self.transaction():
            if staged:
                self.conn.execute(
                    "UPDATE documents SET tokens = (SELECT s.tokens FROM analysis_staging s "
                    "WHERE s.label = documents.label) WHERE label IN (SELECT label FROM analysis_staging)"
                )
                self.conn.execute("DROP TABLE analysis_staging")
            self.conn.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [(k, json.dumps(v, ensure_ascii=False)) for k, v in meta.items()],
            )

    # -- transactions ------------------------------------------------------------------------------
    def transaction(self) -> Transaction:
        return Transaction(self.conn, self.path.parent)

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
        """How many documents (not passages) are stored."""
        counts = self.counts()
        if counts is not None:
            return counts.documents
        return int(self.conn.execute("SELECT count(*) FROM documents WHERE chunk = 0").fetchone()[0])

    def passage_count(self) -> int:
        """How many passages (index entries) are stored."""
        counts = self.counts()
        if counts is not None:
            return counts.passages
        return int(self.conn.execute("SELECT count(*) FROM documents").fetchone()[0])

    def counts(self) -> Counts | None:
        """The documents and passages stored, from the `counts` row the writes keep (None: a folder
        made before it, opened read-only)."""
        if not self._counted:
            return None
        row = self.conn.execute("SELECT documents, passages FROM counts").fetchone()
        return None if row is None else Counts(int(row[0]), int(row[1]))

    def has_passages(self) -> bool:
        """Whether any document is stored as several passages. The partial index answers it at once;
        SQLite's planner would otherwise scan the (id, chunk) index, every row, on every search."""
        query = "SELECT EXISTS (SELECT 1 FROM documents INDEXED BY documents_passages WHERE chunk > 0)"
        return bool(self.conn.execute(query).fetchone()[0])

    def watermark(self) -> Watermark:
        """The store's current high-water marks (AUTOINCREMENT counters never go back)."""
        seqs = dict(self.conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
        return Watermark(int(seqs.get("documents", 0)), int(seqs.get("deletions", 0)))

    def existing(self, ids: Sequence[str]) -> dict[str, tuple[int, str]]:
        """For document ids already stored: id -> (label of its first passage, document hash)."""
        found: dict[str, tuple[int, str]] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ", ".join("?" * len(part))
            rows = self.conn.execute(
                f"SELECT id, label, coalesce(doc_hash, text_hash) FROM documents "
                f"WHERE chunk = 0 AND id IN ({marks})",
                part,
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
            for row in self.conn.execute(
                "SELECT label, id, text, metadata, chunk, span_start, span_end FROM documents "
                f"WHERE label IN ({marks})",
                part,
            ):
                out[int(row[0])] = _document(row)
        return out

    def documents_by_id(self, ids: Sequence[str]) -> dict[str, Document]:
        """Whole documents (a passaged one's full text from `sources`), by id."""
        out: dict[str, Document] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ", ".join("?" * len(part))
            for row in self.conn.execute(
                "SELECT d.label, d.id, coalesce(s.text, d.text), d.metadata, 0, 0, NULL FROM documents d "
                f"LEFT JOIN sources s ON s.id = d.id WHERE d.chunk = 0 AND d.id IN ({marks})",
                part,
            ):
                out[row[1]] = _document(row)
        return out

    def iter_ids(self, batch: int = 10_000) -> Iterator[str]:
        last = 0
        while True:
            rows = self.conn.execute(
                "SELECT label, id FROM documents WHERE label > ? AND chunk = 0 ORDER BY label LIMIT ?",
                (last, batch),
            ).fetchall()
            if not rows:
                return
            yield from (r[1] for r in rows)
            last = rows[-1][0]

    def passages_after(self, after: int, batch: int = 10_000) -> Iterator[list[StoredRow]]:
        """Every passage with a label above `after`, whole, in label order, `batch` at a time."""
        sql = (
            "SELECT d.label, d.id, d.text, d.metadata, d.text_hash, d.tokens, d.chunk, d.span_start, "
            "d.span_end, d.doc_hash, s.text FROM documents d LEFT JOIN sources s "
            "ON d.chunk = 0 AND s.id = d.id WHERE d.label > ? ORDER BY d.label LIMIT ?"
        )
        while True:
            rows = self.conn.execute(sql, (after, batch)).fetchall()
            if not rows:
                return
            yield [StoredRow(int(r[0]), NewRow(*r[1:10]), r[10]) for r in rows]
            after = int(rows[-1][0])

    def has_documents(self) -> bool:
        """Whether any document is stored, without counting them all."""
        return bool(self.conn.execute("SELECT EXISTS (SELECT 1 FROM documents)").fetchone()[0])

    def count_matching(self, where: str, params: Sequence[Any]) -> int:
        """How many passages satisfy the compiled filter `where` (with its `params`)."""
        query = f"SELECT count(*) FROM documents WHERE {where}"
        return int(self.conn.execute(query, list(params)).fetchone()[0])

    def labels_matching(self, where: str, params: Sequence[Any]) -> np.ndarray:
        rows = self.conn.execute(f"SELECT label FROM documents WHERE {where} ORDER BY label", list(params))
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    def _rows_after(
        self, table: str, columns: str, model: str, after: int, batch: int, what: str
    ) -> Iterator[list[Any]]:
        """Rows (label, `columns` of `table` for `model`) of the documents with label > `after`, in
        label order, `batch` at a time (keyset pages); an error naming the labels that lack `what`."""
        sql = (
            f"SELECT d.label, {columns} FROM documents d LEFT JOIN {table} x "
            "ON x.model = ? AND x.text_hash = d.text_hash WHERE d.label > ? ORDER BY d.label LIMIT ?"
        )
        while True:
            rows = self.conn.execute(sql, (model, after, batch)).fetchall()
            if not rows:
                return
            missing = [r[0] for r in rows if r[-1] is None]
            if missing:
                raise CollectionError(
                    f"{self.path}: documents without {what} for {model!r} (labels {missing[:5]})"
                )
            yield rows
            after = int(rows[-1][0])

    @staticmethod
    def _labels(rows: list[Any]) -> np.ndarray:
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def vectors_after(
        self, model: str, dim: int, after: int, batch: int = 20_000
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(labels, vectors) of documents with label > `after`, in label order, in batches."""
        for rows in self._rows_after("embeddings", "x.vector", model, after, batch, "an embedding"):
            vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
            yield self._labels(rows), vectors

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

    def tokens_of(self, labels: Sequence[int]) -> dict[int, list[str]]:
        """The stored lexical tokens of these passages (unknown labels left out)."""
        out: dict[int, list[str]] = {}
        for start in range(0, len(labels), 500):
            part = [int(x) for x in labels[start : start + 500]]
            marks = ", ".join("?" * len(part))
            for label, toks in self.conn.execute(
                f"SELECT label, tokens FROM documents WHERE label IN ({marks})", part
            ):
                out[int(label)] = json.loads(toks)
        return out

    def tokens(
        self, after: int = 0, upto: int | None = None
    ) -> tuple[np.ndarray, list[str], list[list[str]]]:
        """(labels, document ids, tokens) of every passage with a label above `after` (and at most
        `upto`), in label order (all of them by default: for rebuilding BM25; from a watermark, a
        range at a time: for catching up)."""
        labels: list[int] = []
        ids: list[str] = []
        tokens: list[list[str]] = []
        rows = self.conn.execute(
            "SELECT label, id, tokens FROM documents WHERE label > ? AND label <= ? ORDER BY label",
            (after, (1 << 62) if upto is None else upto),
        )
        for label, doc_id, toks in rows:
            labels.append(label)
            ids.append(doc_id)
            tokens.append(json.loads(toks))
        return np.asarray(labels, dtype=np.int64), ids, tokens

    def deletions_after(self, seq: int) -> np.ndarray:
        rows = self.conn.execute("SELECT label FROM deletions WHERE seq > ? ORDER BY seq", (seq,))
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    # -- writes (call inside a transaction) -----------------------------------------------------------
    def cached_sparse(self, model: str, hashes: Iterable[str]) -> set[str]:
        """The hashes that already have a sparse vector for `model`."""
        return self._cached("sparse_vectors", model, hashes)

    def cached_token_vectors(self, model: str, hashes: Iterable[str]) -> set[str]:
        """The hashes that already have a token matrix for `model`."""
        return self._cached("token_vectors", model, hashes)

    def _cached(self, table: str, model: str, hashes: Iterable[str]) -> set[str]:
        wanted = list(dict.fromkeys(hashes))
        found: set[str] = set()
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ", ".join("?" * len(part))
            rows = self.conn.execute(
                f"SELECT text_hash FROM {table} WHERE model = ? AND text_hash IN ({marks})", [model, *part]
            )
            found.update(r[0] for r in rows)
        return found

    def put_token_vectors(self, model: str, hashes: Sequence[str], matrices: Sequence[np.ndarray]) -> None:
        """Token matrices (tokens, dim) into the multi-vector cache as float16; inside the caller's
        transaction."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO token_vectors (model, text_hash, n_tokens, dim, vectors) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (model, h, int(m.shape[0]), int(m.shape[1]), np.asarray(m, dtype="<f2").tobytes())
                for h, m in zip(hashes, matrices, strict=True)
            ],
        )

    def token_vectors_after(
        self, model: str, after: int, batch: int = 5_000
    ) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
        """(labels, float16 token matrices) of passages with label > `after`, in label order, in batches."""
        columns = "x.n_tokens, x.dim, x.vectors"
        for rows in self._rows_after("token_vectors", columns, model, after, batch, "token vectors"):
            yield self._labels(rows), [np.frombuffer(r[3], dtype="<f2").reshape(r[1], r[2]) for r in rows]

    def put_sparse(
        self, model: str, hashes: Sequence[str], rows: Sequence[tuple[np.ndarray, np.ndarray]]
    ) -> None:
        """Sparse vectors (token ids, weights) into the cache; inside the caller's transaction."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO sparse_vectors (model, text_hash, ids, weights) VALUES (?, ?, ?, ?)",
            [
                (model, h, np.asarray(ids, dtype="<u4").tobytes(), np.asarray(weights, dtype="<f4").tobytes())
                for h, (ids, weights) in zip(hashes, rows, strict=True)
            ],
        )

    def sparse_after(
        self, model: str, after: int, batch: int = 20_000
    ) -> Iterator[tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]]:
        """(labels, sparse vectors) of passages with label > `after`, in label order, in batches."""
        for rows in self._rows_after(
            "sparse_vectors", "x.weights, x.ids", model, after, batch, "a sparse vector"
        ):
            yield (
                self._labels(rows),
                [(np.frombuffer(r[2], dtype="<u4"), np.frombuffer(r[1], dtype="<f4")) for r in rows],
            )

    def put_embeddings(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        data = np.ascontiguousarray(vectors, dtype=np.float32)
        self.conn.executemany(
            "INSERT OR IGNORE INTO embeddings (model, text_hash, vector) VALUES (?, ?, ?)",
            [(model, h, data[i].tobytes()) for i, h in enumerate(hashes)],
        )

    def insert(self, rows: Sequence[NewRow], model: str) -> None:
        """New passages (their vectors are joined from the embedding cache when read, so `model`
        is not needed here; the PostgreSQL store copies the vector into the row)."""
        self.conn.executemany(
            "INSERT INTO documents (id, chunk, span_start, span_end, text, metadata, text_hash, doc_hash, "
            "tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (r.id, r.chunk, r.start, r.end, r.text, r.metadata, r.text_hash, r.doc_hash, r.tokens)
                for r in rows
            ],
        )
        documents = sum(1 for r in rows if r.chunk == 0)
        self.conn.execute(
            "UPDATE counts SET documents = documents + ?, passages = passages + ?", (documents, len(rows))
        )

    def put_sources(self, sources: Sequence[tuple[str, str]]) -> None:
        """The whole text of documents stored as several passages: (id, text)."""
        self.conn.executemany("INSERT OR REPLACE INTO sources (id, text) VALUES (?, ?)", sources)

    def update_metadata(self, updates: Sequence[tuple[str, str]]) -> None:
        self.conn.executemany("UPDATE documents SET metadata = ? WHERE id = ?", [(m, i) for i, m in updates])

    def delete(self, ids: Sequence[str]) -> int:
        """Delete documents (every passage of each); returns how many documents existed."""
        labels: list[int] = []
        found = 0
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ", ".join("?" * len(part))
            rows = self.conn.execute(
                f"SELECT label, chunk FROM documents WHERE id IN ({marks})", part
            ).fetchall()
            labels.extend(int(r[0]) for r in rows)
            found += sum(1 for r in rows if r[1] == 0)
            self.conn.execute(f"DELETE FROM sources WHERE id IN ({marks})", part)
        labels.sort()
        self.conn.executemany("DELETE FROM documents WHERE label = ?", [(x,) for x in labels])
        self.conn.executemany("INSERT INTO deletions (label) VALUES (?)", [(x,) for x in labels])
        self.conn.execute(
            "UPDATE counts SET documents = documents - ?, passages = passages - ?", (found, len(labels))
        )
        return found

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
        counts = self.counts()
        if counts is not None:
            row = self.conn.execute("SELECT coalesce(sum(chunk = 0), 0), count(*) FROM documents").fetchone()
            problems += counts_problems(counts, Counts(int(row[0]), int(row[1])))
        return problems
