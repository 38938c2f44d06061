"""Qdrant's BM25 is munjang's BM25: the same scores, bit for bit, and the same order (ties by lower
label) as the in-process index (`live_lexical.LexicalIndex`) built over the same collection's store,
after commits that move the mean length without rewriting the stored weights, after deletions and
updates, across ties at the k-th place, under filters, after a push replayed from a crash, and for
a collection written before the statistics were kept. Qdrant's local mode, the real engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from munjang.search.backends.qdrant.bm25 import STATS_NAME
from munjang.search.backends.qdrant.index import REWEIGHT_DRIFT
from munjang.search.collection.collection import Collection
from munjang.search.followers.lexical import LexicalIndex
from tests.helpers.collection_backends import qdrant_url

WORDS = [
    "서울",
    "부산",
    "날씨",
    "맑음",
    "바람",
    "구름",
    "비",
    "눈",
    "안개",
    "서리",
    "바다",
    "산",
    "강",
    "하늘",
    "별",
    "달",
    "해",
    "꽃",
    "나무",
    "길",
]
QUERIES = ["서울 날씨", "바람 구름 비", "바다 바다 산", "꽃", "별 달 해 서울", "없는말 서울"]


def _texts(rng: np.random.Generator, n: int, low: int, high: int) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(low, high)))) for _ in range(n)]


def _in_process(col: Collection) -> LexicalIndex:
    index = LexicalIndex(col.config["lexical"])
    index.sync(col.store)
    return index


def _same_as_in_process(col: Collection, k: int = 10, allowed: np.ndarray | None = None) -> None:
    tokenize = col.encoding.tokenizer()
    queries = [tokenize(q) for q in QUERIES]
    want = _in_process(col).search(queries, k, allowed)
    got = col.lexical.search(queries, k, allowed)
    for query, w, g in zip(QUERIES, want, got, strict=True):
        assert g == w, query  # labels, order and float scores all equal
    assert any(want), "the queries should match something"


@pytest.fixture
def collection(tmp_path: Path, encoder) -> Any:
    col = Collection.create("c", backend=qdrant_url(tmp_path), encoder=encoder, tokenizer="word")
    yield col
    col.close()


def test_commits_that_move_the_mean_length_keep_scores_exact_without_rewriting(collection) -> None:
    rng = np.random.default_rng(0)
    collection.add([f"a{i}" for i in range(40)], _texts(rng, 40, 4, 7), commit_every=40)
    points = collection.dense.points
    stored = points.client.retrieve(points.name, ids=[1], with_vectors=["bm25"])[0].vector["bm25"]
    collection.add([f"b{i}" for i in range(10)], _texts(rng, 10, 6, 9), commit_every=10)
    state = points.state
    mean = state["length_sum"] / state["texts"]
    assert state["avgdl_low"] < mean  # the first weights were made at a mean length since moved ...
    assert (mean - state["avgdl_low"]) < REWEIGHT_DRIFT * mean  # ... and not rewritten
    again = points.client.retrieve(points.name, ids=[1], with_vectors=["bm25"])[0].vector["bm25"]
    assert again.values == stored.values
    _same_as_in_process(collection)
    _same_as_in_process(collection, k=3)


def test_ties_at_the_kth_place_go_to_the_lower_label(collection) -> None:
    same = ["서울 날씨 맑음"] * 30
    collection.add([f"d{i:02d}" for i in range(40)], [*_texts(np.random.default_rng(1), 10, 3, 6), *same])
    hits = collection.lexical.search([collection.encoding.tokenizer()("서울 날씨 맑음")], 5)[0]
    assert len({score for _, score in hits}) <= 2  # the tied group fills the top five
    _same_as_in_process(collection, k=5)
    _same_as_in_process(collection, k=1)


def test_deletions_and_updates_keep_the_statistics_live(collection) -> None:
    rng = np.random.default_rng(2)
    ids = [f"d{i}" for i in range(30)]
    collection.add(ids, _texts(rng, 30, 2, 10))
    collection.delete(ids[:8])
    collection.add(ids[8:14], _texts(rng, 6, 10, 14), on_conflict="upsert")  # new texts, same ids
    index = _in_process(collection)
    totals = collection.dense.points.stats.totals()
    assert totals["texts"] == len(index.bm25) == 22
    assert totals["length_sum"] == index.bm25.total_length
    _same_as_in_process(collection)


def test_a_filter_narrows_the_same_ranking(collection) -> None:
    rng = np.random.default_rng(3)
    collection.add([f"d{i}" for i in range(30)], _texts(rng, 30, 3, 8), [{"n": i % 3} for i in range(30)])
    allowed = collection.store.labels_matching("json_extract(metadata, '$.n') = ?", [1])
    _same_as_in_process(collection, k=4, allowed=allowed)


def test_a_push_replayed_after_a_crash_counts_nothing_twice(collection) -> None:
    rng = np.random.default_rng(4)
    collection.add([f"a{i}" for i in range(20)], _texts(rng, 20, 2, 6))
    points = collection.dense.points
    before = dict(points.state)
    collection.add([f"b{i}" for i in range(10)], _texts(rng, 10, 5, 9))
    collection.delete(["a1", "a2"])
    # The writer died after the statistics were written, before Qdrant's watermark: it is older.
    points.client.update_collection(points.name, metadata={"munjang": before})
    points.state = before
    assert points.sync(collection.store)
    assert points.stats.totals()["texts"] == 28
    _same_as_in_process(collection)


def test_a_collection_from_before_the_statistics_is_rebuilt_by_its_writer(tmp_path: Path, encoder) -> None:
    url = qdrant_url(tmp_path)
    rng = np.random.default_rng(5)
    with Collection.create("c", backend=url, encoder=encoder, tokenizer="word") as col:
        col.add([f"d{i}" for i in range(25)], _texts(rng, 25, 2, 9))
        points = col.dense.points
        old = {k: v for k, v in points.state.items() if k != "exact"}
        points.client.update_collection(points.name, metadata={"munjang": old})
    (tmp_path / "qdrant-collections" / "c" / STATS_NAME).unlink()
    with Collection.open("c", backend=url, encoder=encoder, readonly=True) as reader:
        assert reader.search("서울 날씨", k=3, mode="lexical")  # Qdrant's own scores until then
    with Collection.open("c", backend=url, encoder=encoder) as col:
        col.add(["new"], ["서울 서울 바다"])
        assert col.dense.points.state["exact"] == 1
        assert col.dense.points.stats.totals()["texts"] == 26
        _same_as_in_process(col)
