"""Full HNSW segments merged into larger graphs in the background (`postgres_graph_merge.py`), on a
real PostgreSQL + pgvector: four full segments become one graph after the commit that fills them, a
search then walks it (as the plan shows) and finds what numpy's exact search finds, a reader opened
before the merge searches on, merges cascade, a merge cut off at any step is taken up by the next
writer, and dropping the collection cancels a merge under way."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from munjang.search.backends.base import NewRow
from munjang.search.backends.postgres.connect import connect
from munjang.search.backends.postgres.dense import PostgresDense
from munjang.search.backends.postgres.graph_merge import (
    GraphMerger,
    build_bytes,
    build_memory_mb,
    next_merge,
    parse_name,
    replaced,
)
from munjang.search.backends.postgres.segments import (
    MERGE_MEMORY_MB,
    MERGE_WORKERS,
    first_asks,
    graphs,
    index_name,
    merge_memory_mb,
    merge_workers,
    search_sql,
)
from munjang.search.backends.postgres.store import PostgresStore

DIM, K, SIZE = 16, 10, 100


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _add(store: PostgresStore, vectors: np.ndarray, start: int, stop: int) -> None:
    rows = [
        NewRow(f"d{i}", f"text {i}", json.dumps({"group": i % 7}), f"h{i}", "[]") for i in range(start, stop)
    ]
    with store.transaction():
        store.put_embeddings("m", [r.text_hash for r in rows], vectors[start:stop])
        store.insert(rows, "m")


def _indexes(store: PostgresStore) -> dict[str, bool]:
    return GraphMerger(store.url, store.schema, store.t).indexes(store.conn)


def _name(first: int, count: int = 1) -> str:
    return index_name((first, count))


def _settle(store: PostgresStore) -> None:
    """Wait for the merges the last commit started."""
    assert store._merger is not None
    store._merger.close()
    assert store._merger.error is None


def _exact(vectors: np.ndarray, query: np.ndarray) -> list[int]:
    return [int(i) + 1 for i in np.argsort(-(vectors @ query))[:K]]  # labels count from 1


@pytest.fixture
def store(postgres_url: str, request: pytest.FixtureRequest):
    made = PostgresStore(postgres_url, "gm_" + re.sub(r"[^A-Za-z0-9_]", "_", request.node.name[5:45]))
    made.drop()
    made.create_schema({"dim": DIM, "metric": "cosine", "index": "hnsw", "hnsw": {"segment_size": SIZE}})
    yield made
    made.drop()
    made.close()


def test_four_full_segments_become_one_graph_that_searches_find(store: PostgresStore) -> None:
    vectors = _vectors(650)
    _add(store, vectors, 0, 350)
    reader = PostgresStore(store.url, store.name, readonly=True)
    try:
        before = PostgresDense(reader, reader.get_meta())
        assert before.search(reader, vectors[5][None], K, None)[0][0, 0] == 6
        _add(store, vectors, 350, 420)  # segment 3 fills: 0-3 merge, 4 is the newest
        _settle(store)
        assert store.get_meta()["hnsw_merged"] == [[0, 4]]
        assert _indexes(store) == {_name(0, 4): True, _name(4): True, _name(5): True, _name(6): True}
        _add(store, vectors, 420, 650)  # a search asks the merged graph and the segments after it
        dense = PostgresDense(store, store.get_meta())
        for i in (5, 250, 399, 600):
            query = vectors[i] + 0.01
            assert list(dense.search(store, query[None], K, None)[0][0]) == _exact(vectors, query)
        # The reader opened before the merge finds the new layout at its next search.
        assert list(before.search(reader, vectors[250][None], K, None)[0][0])[:1] == [251]
    finally:
        reader.close()

    layout = graphs([(0, 4)], 7)
    assert layout == [(0, 4), (4, 1), (5, 1), (6, 1)]
    sql = search_sql(store.t("documents"), "<=>", "TRUE", layout, range(4), SIZE)
    with store.conn.transaction():
        store.conn.execute("SET LOCAL enable_sort = off")
        found = store.conn.execute("EXPLAIN " + sql, [vectors[0], vectors[0], K] * 4).fetchall()
    plan = "\n".join(row[0] for row in found)
    for graph in layout:
        assert f"Index Scan using {index_name(graph)} " in plan
    assert store.integrity_problems("m") == []


def test_merges_cascade_and_filters_still_find_everything(store: PostgresStore) -> None:
    from munjang.search.backends.filters import compile_filter

    vectors = _vectors(1750, seed=1)
    for start in range(0, 1750, 250):
        _add(store, vectors, start, start + 250)
    _settle(store)
    # 17 full segments: 0-15 became four graphs of 4, then one of 16; 16 and 17 stay segments, and
    # 18 and 19 are made ahead (those a merge's build held the writer from, by the merge's thread).
    assert store.get_meta()["hnsw_merged"] == [[0, 16]]
    assert sorted(_indexes(store)) == sorted([_name(0, 16), _name(16), _name(17), _name(18), _name(19)])
    dense = PostgresDense(store, store.get_meta())
    where = compile_filter({"group": 3}, dialect="postgres")
    members = np.flatnonzero(np.arange(1750) % 7 == 3)
    for query in vectors[[3, 900, 1720]]:
        labels, _ = dense.search(store, query[None], K, None, where)
        scores = vectors[members] @ query
        assert list(labels[0]) == [int(members[i]) + 1 for i in np.argsort(-scores)[:K]]
    assert dense.search(store, vectors[900][None], K, None)[0][0, 0] == 901


def test_a_merge_cut_off_at_any_step_is_taken_up_by_the_next_writer(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectors = _vectors(450, seed=2)
    idle = GraphMerger(store.url, store.schema, store.t)
    monkeypatch.setattr(idle, "poke", lambda: None)  # no merge after these commits: cut-off ones follow
    store._merger = idle
    _add(store, vectors, 0, 450)
    documents = store.t("documents")
    # A build cut off: the merged graph's index exists but is invalid (what a cancelled
    # CREATE INDEX CONCURRENTLY leaves). No search walks it, so the collection is whole.
    store.conn.execute(
        f"CREATE INDEX documents_embedding_hnsw_0_4 ON {documents} "
        "USING hnsw (embedding vector_cosine_ops) WHERE label > 0 AND label <= 400"
    )
    store.conn.execute(
        "UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass",
        (f'"{store.schema}".documents_embedding_hnsw_0_4',),
    )
    assert store.integrity_problems("m") == []
    merger = GraphMerger(store.url, store.schema, store.t)
    assert merger.merge_all(store.conn) == 1
    assert store.get_meta()["hnsw_merged"] == [[0, 4]]
    assert _indexes(store) == {_name(0, 4): True, _name(4): True, _name(5): True, _name(6): True}

    # Recorded, but the graphs it replaced not yet dropped: the next round drops them.
    store.conn.execute(
        f"CREATE INDEX documents_embedding_hnsw_2 ON {documents} "
        "USING hnsw (embedding vector_cosine_ops) WHERE label > 200 AND label <= 300"
    )
    assert merger.merge_all(store.conn) == 0
    assert sorted(_indexes(store)) == sorted([_name(0, 4), _name(4), _name(5), _name(6)])

    # Another process merging holds the lock: this writer leaves the merge to it.
    other = PostgresStore(store.url, store.name)
    try:
        key = f"munjang-merge:{store.schema}"
        other.conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (key,))
        store.conn.execute(f"DELETE FROM {store.t('meta')} WHERE key = 'hnsw_merged'")
        assert merger.merge_all(store.conn) == 0
        other.conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))
    finally:
        other.close()
    assert merger.merge_all(store.conn) == 1
    dense = PostgresDense(store, store.get_meta())
    assert list(dense.search(store, vectors[123][None], K, None)[0][0]) == _exact(vectors, vectors[123])


def test_dropping_the_collection_cancels_a_merge_under_way(store: PostgresStore) -> None:
    vectors = _vectors(2100, seed=3)
    store.conn.execute(f"UPDATE {store.t('meta')} SET value = '20' WHERE key = 'hnsw_segment_size'")
    store.__dict__.pop("hnsw_segment_size", None)
    _add(store, vectors, 0, 2100)  # 105 segments of 20: merges for a while
    assert store._merger is not None
    store.drop()
    assert not store.exists()
    assert store._merger._thread is not None and not store._merger._thread.is_alive()


def test_which_graphs_merge_and_which_indexes_a_merge_replaced() -> None:
    size = 100
    assert next_merge(graphs([], 4), 399, size) is None  # segment 3 not yet full
    assert next_merge(graphs([], 4), 400, size) == (0, 4)
    assert next_merge(graphs([(0, 4)], 8), 800, size) == (4, 4)
    assert next_merge(graphs([(0, 4), (4, 4), (8, 4)], 16), 1600, size) == (12, 4)
    assert next_merge([(0, 4), (4, 4), (8, 4), (12, 4)], 1600, size) == (0, 16)
    assert next_merge([(0, 4), (4, 4), (8, 4), (12, 1)], 1600, size) is None
    assert next_merge(graphs([], 3), 10_000, size) is None  # fewer than four
    assert next_merge(graphs([], 4), 400, size, factor=2) == (0, 2)
    # Aligned only: [(0, 4), 4, 5, 6, 7] merges 4-7, never 1 of one size with 3 of another.
    assert next_merge(graphs([(0, 4)], 7), 10_000, size) is None

    assert parse_name("documents_embedding_hnsw_7") == (7, 1)
    assert parse_name("documents_embedding_hnsw_4_4") == (4, 4)
    assert parse_name("documents_embedding_hnsw") is None
    assert parse_name("documents_embedding_hnsw_x") is None
    layout = [(0, 16), (16, 1)]
    indexes = [index_name(g) for g in [(0, 4), (4, 1), (0, 16), (16, 1), (17, 1)]] + ["documents_text_hash"]
    assert replaced(indexes, layout) == ["documents_embedding_hnsw_0_4", "documents_embedding_hnsw_4"]

    # A search sizes each graph's first ask by the labels it holds.
    asks = first_asks(400, [(0, 4), (4, 1), (5, 1), (6, 1), (7, 1)], 8 * 131_072 - 50_000, 131_072)
    assert asks[0] > asks[1] == asks[2] == asks[3] > asks[4]


def test_a_writer_never_waits_on_a_merge_for_a_segment_index(store: PostgresStore) -> None:
    """While a merge's build holds the table (here a transaction holding the same lock), a commit
    that needs a new segment's index stores its passages without it; they are still found (a scan
    of their range), and the merge's thread makes the index once the lock is free."""
    vectors = _vectors(600, seed=4)
    _add(store, vectors, 0, 250)  # segments 0-2 hold labels, 3-4 made ahead
    assert store.get_meta()["hnsw_segments"] == 5
    _settle(store)
    holder = PostgresStore(store.url, store.name)
    try:
        holder.conn.execute("BEGIN")
        holder.conn.execute(f"LOCK TABLE {store.t('documents')} IN SHARE UPDATE EXCLUSIVE MODE")
        _add(store, vectors, 250, 600)  # segment 5 holds labels now, 6-7 wanted ahead
        assert store.get_meta()["hnsw_segments"] == 5  # left to later, not waited for
        assert _name(5) not in _indexes(store)
        dense = PostgresDense(store, store.get_meta())
        for i in (10, 520, 590):
            assert list(dense.search(store, vectors[i][None], K, None)[0][0]) == _exact(vectors, vectors[i])
        holder.conn.execute("COMMIT")
    finally:
        holder.close()
    _settle(store)
    assert {_name(5), _name(6), _name(7)} <= set(_indexes(store))
    assert store.get_meta()["hnsw_segments"] == 8


def test_a_merge_asks_the_memory_that_keeps_pgvector_building_in_memory(postgres_url: str) -> None:
    """pgvector says when a graph outgrows `maintenance_work_mem` (it goes on building on disk,
    several times slower): with what `build_bytes` estimates it never does, with a third it does."""
    import psycopg
    from pgvector.psycopg import register_vector

    n, dim, m = 12_000, DIM, 16
    notices: list[str] = []
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        conn.add_notice_handler(lambda diagnostic: notices.append(diagnostic.message_primary or ""))
        conn.execute("SET client_min_messages = notice")
        conn.execute("DROP TABLE IF EXISTS graph_memory")
        conn.execute(f"CREATE TABLE graph_memory (embedding vector({dim}))")
        with conn.cursor().copy("COPY graph_memory (embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["vector"])
            for vector in _vectors(n, seed=3):
                copy.write_row([vector])
        spilled = {}
        for share in (1, 3):
            kilobytes = max(1024, build_bytes(n, dim, m) // share // 1024)
            conn.execute(f"SET maintenance_work_mem = '{kilobytes}kB'")
            notices.clear()
            conn.execute(
                "CREATE INDEX graph_memory_hnsw ON graph_memory USING hnsw "
                f"(embedding vector_cosine_ops) WITH (m = {m})"
            )
            spilled[share] = any("no longer fits" in notice for notice in notices)
            conn.execute("DROP INDEX graph_memory_hnsw")
        conn.execute("DROP TABLE graph_memory")
    assert spilled == {1: False, 3: True}
    assert build_memory_mb(10, dim, m) == 64  # never below PostgreSQL's default
    assert build_memory_mb(10**9, dim, m) == MERGE_MEMORY_MB == 2048  # never above the cap
    assert build_memory_mb(10**9, dim, m, cap=512) == 512 and build_memory_mb(10, dim, m, cap=8) == 8


def test_a_merge_builds_with_the_parallel_workers_the_collection_allows(store: PostgresStore) -> None:
    """A merge's build takes `merge_workers` parallel workers (none by default, so searches keep the
    other cores); a bad setting is refused when the collection is created, before anything exists."""
    _add(store, _vectors(450), 0, 450)
    _settle(store)
    assert MERGE_WORKERS == 0 and merge_workers({}) == 0 and merge_workers({"merge_workers": 3}) == 3
    conn = connect(store.url)
    try:
        for workers, expected in ((None, "0"), (2, "2")):
            merger = GraphMerger(store.url, store.schema, store.t, workers=workers)
            merger.build(conn, (0, 2), SIZE)  # a graph the layout does not use
            assert conn.execute("SHOW max_parallel_maintenance_workers").fetchone()[0] == expected
            assert _indexes(store).get(_name(0, 2)) is True
            conn.execute(f'DROP INDEX "{store.schema}".{_name(0, 2)}')
    finally:
        conn.close()
    for bad in (-1, True, 1.5, "2"):
        with pytest.raises(ValueError, match="merge_workers"):
            merge_workers({"merge_workers": bad})
    other = PostgresStore(store.url, store.name + "_bad")
    with pytest.raises(ValueError, match="merge_workers"):
        other.create_schema({"dim": DIM, "metric": "cosine", "index": "hnsw", "hnsw": {"merge_workers": -1}})
    assert not other.exists()
    other.close()


def test_a_merge_asks_no_more_memory_than_the_collection_allows(store: PostgresStore) -> None:
    """A merge's build asks PostgreSQL for at most `merge_memory_mb` of `maintenance_work_mem`, read
    from the collection's settings at each build; the graph is built (on disk past the cap) and
    valid; a bad setting is refused when the collection is created, before anything exists."""
    _add(store, _vectors(450), 0, 450)
    _settle(store)
    assert merge_memory_mb({}) == MERGE_MEMORY_MB and merge_memory_mb({"merge_memory_mb": 8}) == 8
    conn = connect(store.url)
    try:
        for settings, expected in (
            ({"segment_size": SIZE}, "64MB"),
            ({"segment_size": SIZE, "merge_memory_mb": 8}, "8MB"),
        ):
            store.set_meta({"hnsw": settings})
            GraphMerger(store.url, store.schema, store.t).build(conn, (0, 2), SIZE)
            assert conn.execute("SHOW maintenance_work_mem").fetchone()[0] == expected
            assert _indexes(store).get(_name(0, 2)) is True
            conn.execute(f'DROP INDEX "{store.schema}".{_name(0, 2)}')
    finally:
        conn.close()
    for bad in (0, True, 1.5, "8"):
        with pytest.raises(ValueError, match="merge_memory_mb"):
            merge_memory_mb({"merge_memory_mb": bad})
    other = PostgresStore(store.url, store.name + "_bad")
    with pytest.raises(ValueError, match="merge_memory_mb"):
        other.create_schema({"dim": DIM, "metric": "cosine", "index": "hnsw", "hnsw": {"merge_memory_mb": 0}})
    assert not other.exists()
    other.close()


def test_a_writer_closing_on_a_merge_says_how_far_it_has_got(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """While a merge runs, `progress` reads PostgreSQL's report of its build: the segments, the
    phase and the passages the new graph will hold. A writer closing meanwhile says so (what it
    waits for, and that Ctrl-C leaves it to the next writer), waits, and the merge is recorded."""
    import logging
    import threading
    import time

    idle = GraphMerger(store.url, store.schema, store.t)
    monkeypatch.setattr(idle, "poke", lambda: None)
    store._merger = idle
    _add(store, _vectors(420, seed=5), 0, 420)  # segments 0-3 full: due to merge
    merger = store._merger = GraphMerger(store.url, store.schema, store.t)
    assert merger.progress(store.conn) is None  # nothing under way
    holder = PostgresStore(store.url, store.name)
    closing = threading.Thread(target=merger.close)
    try:
        holder.conn.execute("BEGIN")  # a writer's transaction: a concurrent build waits for it
        holder.conn.execute(f"LOCK TABLE {store.t('documents')} IN ROW EXCLUSIVE MODE")
        merger.poke()
        deadline = time.monotonic() + 30
        now = merger.progress(store.conn)
        while now is None and time.monotonic() < deadline:
            time.sleep(0.05)
            now = merger.progress(store.conn)
        assert now is not None
        assert (now.graph, now.total, now.done) == ((0, 4), 400, 0)
        assert now.phase.startswith("waiting for")
        assert now.describe() == f"segments 0-3: 400 passages ({now.phase})"
        with caplog.at_level(logging.WARNING, logger="munjang.search.backends.postgres.graph_merge"):
            closing.start()
            while "closing waits" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.05)
            assert closing.is_alive()  # it waits for the merge
            holder.conn.execute("COMMIT")
            closing.join(30)
        assert "closing waits for a merge of HNSW segments 0-3: 400 passages (waiting for" in caplog.text
        assert "Ctrl-C leaves it to the next writer" in caplog.text
    finally:
        if holder.conn.info.transaction_status:
            holder.conn.execute("ROLLBACK")
        holder.close()
    assert not closing.is_alive() and merger.error is None
    assert store.get_meta()["hnsw_merged"] == [[0, 4]]
    assert merger.progress(store.conn) is None
