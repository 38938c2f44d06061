"""BM25 in PostgreSQL against the in-process index over the same store: for each SQL-scored method,
the scores of `PostgresLexical` equal those of `live_lexical.LexicalIndex` (bm25s's formulas) to
float32 rounding, after adds, deletes and upserts, with windows of passages that share their tokens,
unfiltered and filtered; a collection made before the postings gets them from its stored tokens,
and one made before the terms table gets it from its postings (readers count df meanwhile)."""

from __future__ import annotations

import itertools
import json
import random
import re

import numpy as np
import pytest

from munjang.search.backends.base import NewRow
from munjang.search.backends.filters import compile_filter
from munjang.search.backends.postgres.lexical import PostgresLexical, has_postings, has_terms
from munjang.search.backends.postgres.store import PostgresStore
from munjang.search.followers.lexical import LexicalIndex

VOCAB = [f"w{i}" for i in range(60)] + ["사과", "배", "주식", "날씨", "고양이"]
DIM = 4


def _rows(rng: random.Random, start: int, n: int) -> list[NewRow]:
    """n documents; every fifth is three passages, two of which share one window's tokens."""
    rows: list[NewRow] = []
    for i in range(start, start + n):
        meta = json.dumps({"group": i % 4, "year": 2000 + i % 7})
        weights = [1.0 / (1 + j) for j in range(len(VOCAB))]  # Zipf-like: common and rare terms
        tokens = [rng.choices(VOCAB, weights)[0] for _ in range(rng.randint(0, 25))]
        if i % 5:
            rows.append(NewRow(f"d{i}", f"t{i}", meta, f"h{i}", json.dumps(tokens)))
            continue
        shared = json.dumps(tokens)
        tail = json.dumps([*tokens[: len(tokens) // 2], "배"])
        for chunk, toks in enumerate((shared, shared, tail)):
            text, key = f"t{i}.{chunk}", f"h{i}.{chunk}"
            rows.append(NewRow(f"d{i}", text, meta, key, toks, chunk, chunk, chunk + 1))
    return rows


def _insert(store: PostgresStore, rows: list[NewRow]) -> None:
    with store.transaction():
        store.put_embeddings("m", [r.text_hash for r in rows], np.ones((len(rows), DIM), np.float32))
        store.insert(rows, "m")


@pytest.fixture
def store(postgres_url: str, request: pytest.FixtureRequest):
    store = PostgresStore(postgres_url, "lex_" + re.sub(r"\W", "_", request.node.name)[-40:])
    store.drop()
    store.create_schema({"dim": DIM, "metric": "cosine", "index": "exact"})
    yield store
    store.drop()
    store.close()


def _queries(rng: random.Random) -> list[list[str]]:
    return [["사과"], ["w0", "w1"], ["w3", "w3", "배"], ["w40", "날씨", "w2"], ["없는말"], []] + [
        rng.sample(VOCAB, 3) for _ in range(10)
    ]


def _assert_same(sql: list[list[tuple[int, float]]], live: list[list[tuple[int, float]]]) -> None:
    """The same passages with the same scores (to float32 rounding); the same order wherever the
    scores differ by more than rounding (float8 in SQL, float32 in process)."""
    for got, want in zip(sql, live, strict=True):
        assert len(got) == len(want)
        got_scores, want_scores = dict(got), dict(want)
        assert set(got_scores) == set(want_scores)
        for label, score in want_scores.items():
            assert got_scores[label] == pytest.approx(score, rel=1e-5, abs=1e-6)
        scores = [s for _, s in got]
        assert all(a >= b - 1e-5 for a, b in itertools.pairwise(scores))


def _compare(store: PostgresStore, config: dict, rng: random.Random) -> None:
    sql, live = PostgresLexical(store, config), LexicalIndex(config)
    live.sync(store)
    assert np.array_equal(sql.labels, live.labels)
    queries = _queries(rng)
    _assert_same(sql.search(queries, 1000), live.search(queries, 1000))  # every hit: exact sets
    for spec in ({"group": 1}, {"year": {"$gte": 2004}}, {"group": {"$in": [0, 3]}, "year": 2001}):
        where = compile_filter(spec, dialect="postgres")
        allowed = store.labels_matching(*where)
        _assert_same(sql.search_where(queries, 1000, where), live.search(queries, 1000, allowed))
        _assert_same(sql.search(queries, 1000, allowed), live.search(queries, 1000, allowed))
    for got, want in zip(sql.search(queries, 5), live.search(queries, 5), strict=True):
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-5, abs=1e-6)


@pytest.mark.parametrize(
    "config",
    [{}, {"method": "robertson", "k1": 1.2, "b": 0.5}, {"method": "atire", "k1": 0.9, "b": 1.0}],
    ids=["lucene", "robertson", "atire"],
)
def test_sql_scores_equal_the_in_process_index_through_adds_and_deletes(store, config) -> None:
    rng = random.Random(0)
    _insert(store, _rows(rng, 0, 300))
    _compare(store, config, rng)
    _insert(store, _rows(rng, 300, 120))
    with store.transaction():
        store.delete([f"d{i}" for i in range(0, 420, 7)])
    _compare(store, config, rng)
    with store.transaction():  # an upsert: the old passages go, the new ones come, in one commit
        store.delete(["d5", "d6"])
        store.insert(_rows(rng, 5, 2), "m")
    _compare(store, config, rng)
    assert store.integrity_problems("m") == []


def test_a_collection_made_before_the_postings_gets_them_from_its_tokens(store, postgres_url) -> None:
    rng = random.Random(1)
    _insert(store, _rows(rng, 0, 200))
    with store.transaction():
        store.delete(["d3", "d10"])
    for table in ("lexical_texts", "lexical_postings", "lexical_stats", "lexical_terms"):
        store.conn.execute(f"DROP TABLE {store.t(table)}")
    reader = PostgresStore(postgres_url, store.name, readonly=True)
    reader.check_schema()  # a read-only open leaves it as it is (BM25 then runs in process)
    assert not has_postings(reader)
    writer = PostgresStore(postgres_url, store.name)
    writer.check_schema()  # the first writable open adds them
    assert has_postings(writer)
    _compare(writer, {}, rng)
    _insert(writer, _rows(rng, 200, 30))  # and keeps them with each write
    _compare(writer, {}, rng)
    assert writer.integrity_problems("m") == []
    reader.close()
    writer.close()


def test_a_collection_made_before_the_terms_table_gets_it_from_its_postings(store, postgres_url) -> None:
    rng = random.Random(2)
    _insert(store, _rows(rng, 0, 200))
    with store.transaction():
        store.delete([f"d{i}" for i in range(0, 200, 9)])
    store.conn.execute(f"DROP TABLE {store.t('lexical_terms')}")
    reader = PostgresStore(postgres_url, store.name, readonly=True)
    reader.check_schema()  # a read-only open leaves it as it is: df is counted on the postings
    assert has_postings(reader) and not has_terms(reader)
    _compare(reader, {}, rng)
    writer = PostgresStore(postgres_url, store.name)
    writer.check_schema()  # the first writable open counts it from the postings
    assert has_terms(writer)
    _compare(writer, {}, rng)
    _insert(writer, _rows(rng, 200, 30))  # and keeps it with each write and delete
    with writer.transaction():
        writer.delete([f"d{i}" for i in range(1, 230, 4)])
    _compare(writer, {}, rng)
    _compare(reader, {}, rng)  # the reader opened before still counts, and agrees
    assert writer.integrity_problems("m") == []
    counted = dict(
        writer.conn.execute(
            f"SELECT term, count(*) FROM {writer.t('lexical_postings')} GROUP BY term"
        ).fetchall()
    )
    kept = dict(
        writer.conn.execute(f"SELECT term, df FROM {writer.t('lexical_terms')} WHERE df > 0").fetchall()
    )
    assert kept == counted
    writer.conn.execute(f"UPDATE {writer.t('lexical_terms')} SET df = df + 1 WHERE term = '사과'")
    assert writer.integrity_problems("m") == [
        "terms whose document frequency disagrees with their postings: 1"
    ]
    reader.close()
    writer.close()


def test_a_term_whose_last_text_goes_leaves_the_terms_table(store) -> None:
    rows = [
        NewRow("a", "a", "{}", "ha", json.dumps(["사과", "배", "사과"])),
        NewRow("b", "b", "{}", "hb", json.dumps(["배", "주식"])),
    ]
    _insert(store, rows)
    terms = f"SELECT term, df FROM {store.t('lexical_terms')} ORDER BY term"
    assert store.conn.execute(terms).fetchall() == [("배", 2), ("사과", 1), ("주식", 1)]
    with store.transaction():
        store.delete(["a"])
    assert store.conn.execute(terms).fetchall() == [("배", 1), ("주식", 1)]
    with store.transaction():  # back again: a new row
        store.delete(["b"])
        store.insert([NewRow("c", "c", "{}", "ha", json.dumps(["사과"]))], "m")
    assert store.conn.execute(terms).fetchall() == [("사과", 1)]
    assert store.integrity_problems("m") == []
