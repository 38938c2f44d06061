"""Dense search inside PostgreSQL against numpy's exact answer: pgvector HNSW unfiltered, and filtered
searches that pgvector's post-filtered graph walk leaves short, repeated past psycopg's prepared-
statement threshold (a cached plan of the indexed query must not leak into the exact re-run)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from munjang.search.backends.base import NewRow
from munjang.search.backends.filters import compile_filter
from munjang.search.backends.postgres.dense import PostgresDense
from munjang.search.backends.postgres.store import PostgresStore

N, DIM, K = 2000, 16, 10


@pytest.fixture
def stored(postgres_url: str, request: pytest.FixtureRequest):
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((N, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    config = {"dim": DIM, "metric": "cosine", "index": "hnsw", "hnsw": {"expansion_search": 16}}
    store = PostgresStore(postgres_url, f"dense_{request.node.name[-20:].strip('[]')}")
    store.drop()
    store.create_schema(config)
    rows = [NewRow(f"d{i}", f"text {i}", json.dumps({"group": i % 100}), f"h{i}", "[]") for i in range(N)]
    with store.transaction():
        store.put_embeddings("m", [r.text_hash for r in rows], vectors)
        store.insert(rows, "m")
    yield store, PostgresDense(store, config), vectors
    store.drop()
    store.close()


def _exact(vectors: np.ndarray, query: np.ndarray, members: np.ndarray) -> list[int]:
    scores = vectors[members] @ query
    return [int(members[i]) + 1 for i in np.argsort(-scores)[:K]]  # labels count from 1


def test_unfiltered_hnsw_search_finds_the_exact_neighbours(stored) -> None:
    store, dense, vectors = stored
    queries = vectors[:20] + 0.01
    labels, scores = dense.search(store, queries, K, None)
    everyone = np.arange(N)
    hits = [len(set(labels[i]) & set(_exact(vectors, q, everyone))) for i, q in enumerate(queries)]
    assert np.mean(hits) / K >= 0.9
    cosine = float(vectors[0] @ queries[0]) / float(np.linalg.norm(queries[0]))
    assert labels[0, 0] == 1 and scores[0, 0] == pytest.approx(cosine, abs=1e-5)


def test_selective_filters_rerun_exactly_every_time(stored) -> None:
    store, dense, vectors = stored
    where = compile_filter({"group": 7}, dialect="postgres")
    members = np.flatnonzero(np.arange(N) % 100 == 7)
    for i in range(12):  # psycopg prepares a statement from its 5th run on
        query = vectors[100 + i]
        labels, scores = dense.search(store, query[None], K, None, where)
        assert list(labels[0]) == _exact(vectors, query, members), f"query {i}"
        assert np.all(np.diff(scores[0]) <= 1e-6)


def test_equality_filters_keep_their_meaning_and_can_use_the_metadata_index(postgres_url: str) -> None:
    """Equality compiles to jsonb containment plus the equality itself: the same rows as before (numbers
    by value, nested keys, no match inside arrays), and a plan that can read the GIN index. A collection
    made before the index existed gets it when opened for writing."""
    metadata = [
        {"a": 1},
        {"a": 1.0},
        {"a": "1"},
        {"a": [1]},
        {"a": {"b": 1}},
        {"a": True},
        {},
        {"n": {"a": 1}},
    ]
    store = PostgresStore(postgres_url, "filter_semantics")
    store.drop()
    store.create_schema({"dim": 2, "metric": "cosine", "index": "exact"})
    rows = [NewRow(f"d{i}", f"t{i}", json.dumps(m), f"h{i}", "[]") for i, m in enumerate(metadata)]
    with store.transaction():
        store.put_embeddings("m", [r.text_hash for r in rows], np.ones((len(rows), 2), np.float32))
        store.insert(rows, "m")
    expected = {
        json.dumps({"a": 1}): [1, 2],
        json.dumps({"a": "1"}): [3],
        json.dumps({"a.b": 1}): [5],
        json.dumps({"a": True}): [6],
        json.dumps({"n.a": 1}): [8],
        json.dumps({"a": 2}): [],
    }
    try:
        for spec, labels in expected.items():
            where, params = compile_filter(json.loads(spec), dialect="postgres")
            assert sorted(store.labels_matching(where, params).tolist()) == labels, spec
        where, params = compile_filter({"a": 1}, dialect="postgres")
        with store.transaction():
            store.conn.execute("SET LOCAL enable_seqscan = off")
            plan = store.conn.execute(
                f"EXPLAIN SELECT label FROM {store.t('documents')} WHERE {where}", params
            ).fetchall()
        assert "documents_metadata_gin" in " ".join(row[0] for row in plan)
        with store.transaction():
            store.conn.execute(f'DROP INDEX "{store.schema}".documents_metadata_gin')
        store.close()
        store = PostgresStore(postgres_url, "filter_semantics")
        store.check_schema()
        found = store.conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'documents_metadata_gin'",
            (store.schema,),
        ).fetchone()
        assert found is not None and "jsonb_path_ops" in found[0]
    finally:
        store.drop()
        store.close()
