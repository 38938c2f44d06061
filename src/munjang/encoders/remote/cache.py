"""A disk cache of remote embeddings, so a repeated run sends no request and costs nothing.

One SQLite file (`<munjang cache>/remote/embeddings.sqlite3` by default) keyed by (base URL, model,
dimensions, sha256 of the exact text sent); the vector is stored as float32 bytes. The API key plays no
part in it: the same model behind the same URL gives the same vectors whoever asks. WAL mode
lets several processes read and write it at once.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..._util.paths import cache_root

SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    base_url TEXT NOT NULL,
    model TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    text_sha256 TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (base_url, model, dimensions, text_sha256)
) WITHOUT ROWID
"""
# SQLite's default limit on the parameters of one statement is 999 in older builds.
LOOKUP_CHUNK = 500


def default_cache_path() -> Path:
    """Where remote embeddings are cached unless the caller names a file."""
    return cache_root() / "remote" / "embeddings.sqlite3"


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors by (base URL, model, dimensions, text): `get` what is there, `put` what came back."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(SCHEMA)
        self._db.commit()

    def get(
        self, base_url: str, model: str, dimensions: int | None, texts: Sequence[str]
    ) -> dict[str, np.ndarray]:
        """The cached vectors of `texts`, by text (texts not cached are absent)."""
        hashes = {text_sha256(t): t for t in dict.fromkeys(texts)}
        found: dict[str, np.ndarray] = {}
        keys = list(hashes)
        with self._lock:
            for start in range(0, len(keys), LOOKUP_CHUNK):
                part = keys[start : start + LOOKUP_CHUNK]
                rows = self._db.execute(
                    "SELECT text_sha256, vector FROM embeddings WHERE base_url = ? AND model = ? "
                    f"AND dimensions = ? AND text_sha256 IN ({','.join('?' * len(part))})",
                    (base_url, model, dimensions or 0, *part),
                ).fetchall()
                for digest, blob in rows:
                    found[hashes[digest]] = np.frombuffer(blob, dtype="<f4").copy()
        return found

    def put(
        self, base_url: str, model: str, dimensions: int | None, texts: Sequence[str], vectors: np.ndarray
    ) -> None:
        """Store one vector per text (a text already there is replaced)."""
        rows = [
            (base_url, model, dimensions or 0, text_sha256(t), np.ascontiguousarray(v, dtype="<f4").tobytes())
            for t, v in zip(texts, vectors, strict=True)
        ]
        with self._lock, self._db:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?)", rows)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
