"""The documents and passages a collection holds, kept by its writes (`Store.counts`): equal to its
rows through adds, deletes and upserts of long and short documents on every backend, and what
`len()` and `info()` report; a collection made before them counted once by its first writer (a
reader before that counts rows)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from munjang.search.backends.base import Counts
from munjang.search.collection.collection import Collection
from tests.helpers.collection_backends import Backend
from tests.helpers.documents import SENTENCES

LONG = " ".join(SENTENCES * 3)  # well over a 32-token passage
SMALL = {"max_tokens": 32, "overlap_tokens": 0}
SHORT = ["강아지가 공을 쫓는다.", "고양이가 소파에서 잔다.", "주식 시장이 급락했다.", "내일은 맑겠습니다."]


def rows(col: Collection) -> Counts:
    """The documents and passages the store's rows hold, counted."""
    query = "SELECT sum(CASE WHEN chunk = 0 THEN 1 ELSE 0 END), count(*) FROM documents"
    if col.store.dialect == "postgres":
        query = query.replace("documents", col.store.t("documents"))  # type: ignore[attr-defined]
    documents, passages = col.store.conn.execute(query).fetchone()  # type: ignore[attr-defined]
    return Counts(int(documents or 0), int(passages))


def test_the_kept_counts_follow_every_write(backend: Backend, encoder: Any) -> None:
    with backend.create("counts", encoder=encoder, chunking=SMALL) as col:
        assert col.store.counts() == Counts(0, 0)
        col.add(["long", "a", "b"], [LONG, SHORT[0], SHORT[1]])
        kept = col.store.counts()
        assert kept == rows(col) and kept is not None and kept.documents == 3 and kept.passages > 5
        col.delete(["long", "missing"])
        assert col.store.counts() == rows(col) == Counts(2, 2)
        col.upsert(["a", "c"], [LONG, SHORT[2]])  # one short document becomes long, one is new
        kept = col.store.counts()
        assert kept == rows(col) and kept is not None and kept.documents == 3 and kept.passages > 5
        info = col.info()
        assert len(col) == info["documents"] == kept.documents and info["passages"] == kept.passages
        assert col.check() == []
    with backend.open("counts", encoder=encoder, readonly=True) as reader:
        assert reader.store.counts() == kept and len(reader) == 3


def _forget_counts(backend: Backend, col: Collection) -> None:
    """Make the collection what a munjang before the kept counts left (closed first for a folder)."""
    if backend.kind == "postgres":
        state = col.store.t("state")  # type: ignore[attr-defined]
        col.store.conn.execute(f"ALTER TABLE {state} DROP COLUMN documents, DROP COLUMN passages")  # type: ignore[attr-defined]
        col.close()
        return
    col.close()
    with sqlite3.connect(backend.location("old") / "collection.db") as conn:
        conn.execute("DROP TABLE counts")


@pytest.mark.parametrize("kind", ["embedded", "postgres"])
def test_a_collection_made_before_the_counts_is_counted_by_its_first_writer(
    kind: str, tmp_path: Path, encoder: Any, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("postgres_url") if kind == "postgres" else None
    backend = Backend(kind, tmp_path, url)
    col = backend.create("old", encoder=encoder, chunking=SMALL)
    col.add(["long", "a", "gone"], [LONG, SHORT[0], SHORT[1]])
    col.delete(["gone"])
    _forget_counts(backend, col)
    with backend.open("old", encoder=encoder, readonly=True) as reader:
        assert reader.store.counts() is None  # a reader changes no schema: it counts rows
        info = reader.info()
        assert len(reader) == info["documents"] == 2 and info["passages"] == rows(reader).passages
        assert reader.search("제주도 한라산", k=1, mode="hybrid")[0].id == "long"
    with backend.open("old", encoder=encoder) as writer:
        assert writer.store.counts() == rows(writer) and writer.check() == []
        writer.add(["b"], [SHORT[2]])
        assert writer.store.counts() == rows(writer) and len(writer) == 3


def test_check_reports_counts_that_disagree_with_the_rows(backend: Backend, encoder: Any) -> None:
    with backend.create("wrong", encoder=encoder, chunking=SMALL) as col:
        col.add(["long", "a"], [LONG, SHORT[0]])
        assert col.check() == []
        table = col.store.t("state") if col.store.dialect == "postgres" else "counts"  # type: ignore[attr-defined]
        col.store.conn.execute(f"UPDATE {table} SET documents = documents + 1")  # type: ignore[attr-defined]
        problems = col.check()
        assert len(problems) == 1 and "the kept counts say 3 documents" in problems[0]
