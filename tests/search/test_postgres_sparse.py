"""SPLADE retrieval in PostgreSQL against the folder backend's in-process index: the same documents
added, upserted and deleted in both, sparse and hybrid (with sparse) searches give the same
documents with the same scores (1e-5 relative), unfiltered and filtered; the sparse postings are
PostgreSQL's (nothing per passage in the process), and a passage without its sparse vector is
refused with nothing written. `test_postgres_processes.py` has a second process see sparse writes."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from munjang.search.backends.base import CollectionError, NewRow, sparse_cache_key
from munjang.search.backends.postgres.sparse import PostgresSparse
from munjang.search.backends.postgres.store import PostgresStore
from munjang.search.collection.collection import Collection
from munjang.search.followers.retrievers import LiveSparseIndex
from tests.helpers.sparse import munjang_splade

DOCS = {
    "a": ("the cat sat on the mat", {"lang": "en", "year": 2001}),
    "b": ("dogs and cats in the rain", {"lang": "en", "year": 2002}),
    "c": ("서울 과 부산 에 비 가 온다", {"lang": "ko", "year": 2003}),
    "d": ("사과 바나나 고양이 강아지", {"lang": "ko", "year": 2004}),
    "e": ("the sun is on the road", {"lang": "en", "year": 2005}),
    "f": ("the car is on the road in the rain", {"lang": "en", "year": 2006}),
}
MORE = {
    "g": ("고양이 는 서울 에 비", {"lang": "ko", "year": 2007}),
    "h": ("a dog and a cat on the road", {"lang": "en", "year": 2008}),
}
QUERIES = ["cat on the mat", "서울 비", "sun road", "dog rain car"]
FILTERS: list[dict[str, Any] | None] = [None, {"lang": "en"}, {"year": {"$gte": 2003}}, {"lang": "fr"}]


@pytest.fixture(scope="module")
def splade(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return munjang_splade(tmp_path_factory.mktemp("splade") / "model", inference_free=True)


@pytest.fixture
def pair(tmp_path: Path, postgres_url: str, encoder, splade: Path):
    """The same empty collection twice: in a folder and in PostgreSQL."""
    options = {"encoder": encoder, "tokenizer": "word", "sparse_model": splade}
    folder = Collection.create(tmp_path / "folder", **options)
    name = f"sparse_{tmp_path.name[-30:]}".replace("-", "_")
    sql = Collection.create(name, backend=postgres_url, **options)
    yield folder, sql
    sql.store.drop()  # type: ignore[attr-defined]
    sql.close()
    folder.close()


def _add(collections: tuple[Collection, ...], docs: dict[str, tuple[str, dict[str, Any]]], **kw: Any) -> None:
    for c in collections:
        c.add(list(docs), [t for t, _ in docs.values()], [m for _, m in docs.values()], **kw)


def _assert_same(sql: list[Any], folder: list[Any], stages: tuple[str, ...]) -> None:
    """The same documents and stage scores (1e-5 relative); in the same order wherever the
    scores differ by more than float rounding."""
    assert {h.id for h in sql} == {h.id for h in folder}
    want = {h.id: h for h in folder}
    for hit in sql:
        assert hit.score == pytest.approx(want[hit.id].score, rel=1e-5, abs=1e-6)
        assert set(hit.scores) == set(want[hit.id].scores)  # found by the same retrievers
        for stage in set(stages) & set(hit.scores):
            assert hit.scores[stage] == pytest.approx(want[hit.id].scores[stage], rel=1e-5, abs=1e-6)
    assert all(a.score >= b.score - 1e-5 for a, b in itertools.pairwise(sql))


def _compare(folder: Collection, sql: Collection, modes: tuple[str, ...] = ("sparse",)) -> None:
    stages = {"sparse": ("sparse",), "hybrid": ("sparse", "fused")}
    for spec in FILTERS:
        for mode in modes:
            wanted = folder.search(QUERIES, k=4, mode=mode, filter=spec)
            if spec is None:
                assert all(wanted)  # every query shares tokens with some document
            for got, want in zip(sql.search(QUERIES, k=4, mode=mode, filter=spec), wanted, strict=True):
                _assert_same(got, want, stages[mode])


def test_sparse_and_hybrid_equal_the_folder_backend_through_adds_upserts_and_deletes(pair) -> None:
    folder, sql = pair
    assert isinstance(sql.sparse.engine, PostgresSparse)  # filtered in its SQL query
    assert isinstance(folder.sparse.engine, LiveSparseIndex)  # by allowed labels, in process
    assert sql.retrievers("hybrid") == ["dense", "lexical", "sparse"]
    _add(pair, DOCS)
    both = [col.sparse.stored(col.store, [col.get(["a"])[0].label]) for col in (folder, sql)]  # type: ignore[union-attr]
    assert both[0] == both[1] and both[0][0]  # the same vector, read back from either
    _compare(folder, sql, ("sparse", "hybrid"))
    _add(pair, {"a": ("서울 부산 비 고양이", {"lang": "ko", "year": 2001}), **MORE}, on_conflict="upsert")
    for c in pair:
        assert c.delete(["e", "missing"]) == 1
    _compare(folder, sql)
    _add(pair, {"b": ("dogs and cats in the rain", {"lang": "ko", "year": 2002})}, on_conflict="upsert")
    assert [h.id for h in sql.search("dog rain", k=4, mode="sparse", filter={"lang": "ko"})][:1] == ["b"]
    _compare(folder, sql, ("sparse", "hybrid"))  # hybrid encodes dense queries: twice is enough
    assert sql.check() == [] and folder.check() == []
    assert sql.store.count_matching("TRUE", []) == len(folder)


def test_a_passage_without_its_sparse_vector_is_refused_and_a_commit_vacuums_the_postings(
    postgres_url: str,
) -> None:
    store = PostgresStore(postgres_url, "sparse_refused")
    store.drop()
    store.create_schema({"dim": 2, "metric": "cosine", "index": "exact", "sparse": {"model": "s", "dim": 9}})
    key = sparse_cache_key("s")
    try:
        rows = [NewRow("x", "x", "{}", "hx", '["사과"]'), NewRow("y", "y", "{}", "hy", "[]")]
        with store.transaction():
            store.put_embeddings("m", ["hx", "hy"], np.ones((2, 2), np.float32))
            store.put_sparse(key, ["hx"], [(np.array([1, 3, 1]), np.array([0.5, 2.0, 0.25], np.float32))])
        vacuumed = _vacuum_counts(store)
        with pytest.raises(CollectionError, match="without a sparse vector"), store.transaction():
            store.insert(rows, "m")
        assert store.passage_count() == 0 and _vacuum_counts(store) == vacuumed  # a rollback vacuums nothing
        with store.transaction():
            store.put_sparse(key, ["hy"], [(np.zeros(0, np.int64), np.zeros(0, np.float32))])
            store.insert(rows, "m")
        # vacuumed at the commit, for index-only reads. Whether VACUUM may mark the new rows'
        # pages all-visible depends on every other snapshot in the database (an autovacuum
        # ANALYZE elsewhere holds one), so the test asks that it ran, not what it could mark.
        assert _vacuum_counts(store) == [count + 1 for count in vacuumed]
        x, y = store.existing(["x", "y"])["x"][0], store.existing(["x", "y"])["y"][0]
        search = PostgresSparse(store, key)
        # token 1 given twice weighs 0.75 in x; y has no tokens, so it scores nothing
        assert search.search_where([(np.array([1, 1, 5]), np.array([1.0, 1.0, 3.0]))], 5, None) == [
            [(x, 1.5)]
        ]
        assert search.problems(store, np.array([x, y])) == []
        labels, vectors = next(store.sparse_after(key, 0))
        assert labels.tolist() == [x, y] and vectors[0][0].tolist() == [1, 3, 1] and len(vectors[1][0]) == 0
    finally:
        store.drop()
        store.close()


def _vacuum_counts(store: PostgresStore) -> list[int]:
    """How many times VACUUM (not autovacuum) has run on the BM25 and the sparse postings."""
    return [
        store.conn.execute("SELECT pg_stat_get_vacuum_count(%s::regclass)", (store.t(table),)).fetchone()[0]
        for table in ("lexical_postings", "sparse_postings")
    ]
