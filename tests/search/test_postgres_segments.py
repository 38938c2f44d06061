"""pgvector's HNSW in segments (`postgres_segments.py`), on a real PostgreSQL + pgvector: each range of
labels gets its partial index in the transaction that first stores a label in it, a search asks every
segment (each by its own index, as the plan shows) and finds what numpy's exact search finds, a reader
finds segments committed after it opened, and a collection made before segments keeps its one graph."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from munjang.search.backends.base import CollectionError, NewRow
from munjang.search.backends.postgres.dense import EF_SQL, WALK_SQL, PostgresDense
from munjang.search.backends.postgres.segments import (
    ask_again,
    best_of,
    first_ask,
    first_asks,
    graphs,
    search_sql,
)
from munjang.search.backends.postgres.store import PostgresStore

DIM, K, SIZE = 16, 10, 400


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _rows(start: int, stop: int) -> list[NewRow]:
    return [
        NewRow(f"d{i}", f"text {i}", json.dumps({"group": i % 50}), f"h{i}", "[]") for i in range(start, stop)
    ]


def _add(store: PostgresStore, vectors: np.ndarray, start: int, stop: int) -> None:
    rows = _rows(start, stop)
    with store.transaction():
        store.put_embeddings("m", [r.text_hash for r in rows], vectors[start:stop])
        store.insert(rows, "m")


def _indexes(store: PostgresStore) -> dict[str, str]:
    rows = store.conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes "
        "WHERE schemaname = %s AND indexname LIKE 'documents_embedding%%'",
        (store.schema,),
    ).fetchall()
    return dict(rows)


def _exact(vectors: np.ndarray, query: np.ndarray, members: np.ndarray) -> list[int]:
    scores = vectors[members] @ query
    return [int(members[i]) + 1 for i in np.argsort(-scores)[:K]]  # labels count from 1


@pytest.fixture
def store(postgres_url: str, request: pytest.FixtureRequest):
    made = PostgresStore(postgres_url, "seg_" + re.sub(r"[^A-Za-z0-9_]", "_", request.node.name[5:45]))
    made.drop()
    yield made
    made.drop()
    made.close()


def test_each_range_of_labels_gets_its_index_and_a_search_asks_every_one(store: PostgresStore) -> None:
    config = {"dim": DIM, "metric": "cosine", "index": "hnsw", "hnsw": {"segment_size": SIZE}}
    store.create_schema(config)
    assert _indexes(store) == {}  # no segment before its first passage
    vectors = _vectors(1300)
    for start, stop in ((0, 150), (150, 1000), (1000, 1300)):  # one commit crosses two boundaries
        _add(store, vectors, start, stop)
    indexes = _indexes(store)  # the 4 segments holding labels and 2 ahead of them
    assert sorted(indexes) == [f"documents_embedding_hnsw_{n}" for n in range(6)]
    for n in range(6):
        predicate = f"(label > {n * SIZE}) AND (label <= {(n + 1) * SIZE})"
        assert predicate in indexes[f"documents_embedding_hnsw_{n}"]
    meta = store.get_meta()
    assert (meta["hnsw_segment_size"], meta["hnsw_segments"]) == (SIZE, 6)

    dense = PostgresDense(store, meta)
    queries = vectors[::97] + 0.01
    labels, scores = dense.search(store, queries, K, None)
    everyone = np.arange(len(vectors))
    recall = [len(set(labels[i]) & set(_exact(vectors, q, everyone))) / K for i, q in enumerate(queries)]
    assert np.mean(recall) >= 0.95
    assert [row[0] for row in labels] == [i * 97 + 1 for i in range(len(queries))]
    assert np.all(np.diff(scores, axis=1) <= 1e-6)

    # Each branch can be served by its segment's index (the literal bounds prove its predicate). At
    # a few hundred rows a segment, the planner rightly finds sorting them cheaper: made dearer here.
    sql = search_sql(store.t("documents"), "<=>", "TRUE", graphs([], 4), range(4), SIZE)
    with store.conn.transaction():
        store.conn.execute("SET LOCAL enable_sort = off")
        found = store.conn.execute("EXPLAIN " + sql, [vectors[0], vectors[0], K] * 4).fetchall()
    plan = "\n".join(row[0] for row in found)
    for n in range(4):
        assert f"Index Scan using documents_embedding_hnsw_{n} " in plan
    assert dense.memory_bytes() > 0 and store.integrity_problems("m") == []


def test_filters_deletions_and_a_reader_opened_before_the_newest_segment(store: PostgresStore) -> None:
    from munjang.search.backends.filters import compile_filter

    config = {"dim": DIM, "metric": "cosine", "index": "hnsw", "hnsw": {"segment_size": SIZE}}
    store.create_schema(config)
    vectors = _vectors(1000, seed=1)
    _add(store, vectors, 0, 500)
    reader = PostgresStore(store.url, store.name, readonly=True)
    try:
        dense = PostgresDense(reader, reader.get_meta())
        assert dense.search(reader, vectors[900][None], K, None)[0][0, 0] != 901
        _add(store, vectors, 500, 1000)  # segment 2 is made after the reader opened
        assert dense.search(reader, vectors[900][None], K, None)[0][0, 0] == 901

        where = compile_filter({"group": 3}, dialect="postgres")
        members = np.flatnonzero(np.arange(1000) % 50 == 3)  # short: re-run exactly
        for query in vectors[[3, 450, 990]]:
            labels, _ = dense.search(reader, query[None], K, None, where)
            assert list(labels[0]) == _exact(vectors, query, members)

        store.delete(["d900"])
        assert 901 not in dense.search(reader, vectors[900][None], K, None)[0][0]
        assert reader.conn.info.transaction_status.name == "IDLE"
    finally:
        reader.close()


def test_a_search_reads_one_snapshot_and_leaves_the_connection_as_it_was(store: PostgresStore) -> None:
    store.create_schema({"dim": DIM, "metric": "cosine", "index": "hnsw"})
    with store.snapshot():
        assert store.conn.execute("SHOW transaction_isolation").fetchone()[0] == "repeatable read"
        assert store.conn.execute("SHOW transaction_read_only").fetchone()[0] == "on"
    assert store.conn.execute("SHOW transaction_isolation").fetchone()[0] == "read committed"
    _add(store, _vectors(10), 0, 10)  # writes still work after a snapshot
    assert store.passage_count() == 10


def test_a_collection_made_before_segments_keeps_its_one_graph(store: PostgresStore) -> None:
    config = {"dim": DIM, "metric": "cosine", "index": "hnsw", "hnsw": {"segment_size": SIZE}}
    store.create_schema(config)
    # What an older munjang made: no segment settings, one index over the whole table.
    store.conn.execute(f"DELETE FROM {store.t('meta')} WHERE key IN ('hnsw_segment_size', 'hnsw_segments')")
    store.conn.execute(
        f"CREATE INDEX documents_embedding_hnsw ON {store.t('documents')} "
        "USING hnsw (embedding vector_cosine_ops)"
    )
    vectors = _vectors(900, seed=2)
    _add(store, vectors, 0, 900)
    assert list(_indexes(store)) == ["documents_embedding_hnsw"]  # no segment made
    dense = PostgresDense(store, store.get_meta())
    assert dense.segment_size is None
    labels, _ = dense.search(store, vectors[[5, 805]], K, None)
    assert [labels[0, 0], labels[1, 0]] == [6, 806]
    assert dense.memory_bytes() > 0


@pytest.mark.parametrize("size", [0, -5, 1.5, True, "big"])
def test_a_bad_segment_size_is_refused_before_anything_is_made(store: PostgresStore, size: object) -> None:
    with pytest.raises((ValueError, CollectionError), match="segment_size"):
        store.create_schema({"dim": DIM, "metric": "cosine", "index": "hnsw", "hnsw": {"segment_size": size}})
    assert not store.exists()


def test_each_segment_is_first_asked_for_its_share_and_again_when_it_may_hold_more(
    store: PostgresStore,
) -> None:
    """The best k all lie in one of 8 segments (a cluster added together, as a source's documents
    are): its first ask (its share of k plus the margin) is short of them, so it is asked again, and
    the search finds what numpy's exact search finds."""
    k, size = 50, 200
    config = {"dim": DIM, "metric": "cosine", "index": "hnsw", "hnsw": {"segment_size": size}}
    store.create_schema(config)
    vectors = _vectors(1600, seed=2)
    centre = vectors[0].copy()
    near = centre + 0.05 * np.random.default_rng(3).standard_normal((60, DIM)).astype(np.float32)
    vectors[820:880] = near / np.linalg.norm(near, axis=1, keepdims=True)  # in segment 4 only
    _add(store, vectors, 0, 1600)
    dense = PostgresDense(store, store.get_meta())
    assert max(first_asks(k, graphs([], 8), 1600, size)) < k
    for query in (centre, vectors[830], vectors[5]):
        labels, _ = dense.search(store, query[None], k, None)
        assert list(labels[0]) == [int(i) + 1 for i in np.argsort(-(vectors @ query))[:k]]


def test_first_asks_best_of_and_ask_again() -> None:
    assert first_ask(100, 1.0) == 100 and first_asks(100, [(0, 1)], 5, 131_072) == [100]
    assert first_ask(100, 1 / 8) == 66  # 12.5 + 16 x sqrt(12.5 x 7/8)
    assert first_ask(10, 1 / 1000) == 2
    assert all(1 <= first_ask(k, n / 40) <= k for k in (1, 2, 10, 100) for n in range(1, 41))
    # The newest segment is partly filled: the full ones hold more than 1 / segments of the labels.
    assert first_asks(400, graphs([], 8), 1_000_000, 131_072) == [161] * 7 + [122]
    assert first_asks(100, graphs([], 2), 200_000, 131_072) == [100, 100]  # a margin this wide: all of k
    # (segment, label, distance): segment 0 gave all 2 it was asked for and its last ranks within
    # the best 3, so it may hold more; segment 1's last does not; segment 2 gave fewer than asked.
    rows = [(0, 1, 0.1), (0, 2, 0.2), (1, 3, 0.15), (1, 4, 0.9), (2, 5, 0.3)]
    best = best_of(rows, 3)
    assert best == [(1, 0.1), (3, 0.15), (2, 0.2)]
    assert ask_again(rows, best, 3, [2, 2, 2]) == [0]
    assert ask_again(rows, best, 3, [3, 3, 3]) == []  # asked for all k: done
    assert ask_again(rows, best, 3, [3, 2, 2]) == []  # 0 gave fewer than asked
    assert ask_again(rows[:1], best_of(rows[:1], 3), 3, [1]) == [0]  # fewer than k in all: any full one
    assert best_of([(0, 7, 0.5), (1, 6, 0.5)], 1) == [(6, 0.5)]  # ties: the lower label


def test_an_unfiltered_search_walks_every_graph_however_stale_the_statistics(store: PostgresStore) -> None:
    """The planner picks between a graph and a sort of its labels by statistics PostgreSQL refreshes
    only after a tenth of the table changed: with the newest passages unseen, it sorts their
    segments (the stale estimate says a handful). An unfiltered search sets sorting off for its
    transaction (`WALK_SQL`), so every graph is walked."""
    config = {"dim": DIM, "metric": "cosine", "index": "hnsw", "hnsw": {"segment_size": SIZE}}
    store.create_schema(config)
    store.conn.execute(f"ALTER TABLE {store.t('documents')} SET (autovacuum_enabled = false)")
    vectors = _vectors(1300)
    _add(store, vectors, 0, 150)
    store.conn.execute(f"ANALYZE {store.t('documents')}")
    _add(store, vectors, 150, 1300)  # unseen by the statistics
    sql = search_sql(store.t("documents"), "<=>", "TRUE", graphs([], 4), range(4), SIZE)
    plans = {}
    for setting in (EF_SQL, WALK_SQL):
        with store.conn.transaction():
            store.conn.execute(setting, ["100"])
            found = store.conn.execute("EXPLAIN " + sql, [vectors[0], vectors[0], 100] * 4).fetchall()
        plans[setting] = "\n".join(row[0] for row in found)
    assert "Sort" in plans[EF_SQL]  # what the planner chose by the stale statistics
    for n in range(4):
        assert f"Index Scan using documents_embedding_hnsw_{n} " in plans[WALK_SQL]
    assert "Sort Key" not in plans[WALK_SQL].split("Append")[-1]
    labels, _ = PostgresDense(store, store.get_meta()).search(store, vectors[1200][None], K, None)
    assert labels[0][0] == 1201
