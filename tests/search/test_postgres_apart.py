"""A PostgreSQL hybrid search runs its dense query on a second thread and connection while BM25 runs on
the first (`DenseSearch.apart`): the same results as one after the other, the dense query really on the
other connection, never inside a write transaction, and an error on either side leaves both usable."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from munjang.search.backends.postgres import store as postgres_store
from munjang.search.collection.collection import Collection
from tests.helpers.documents import BY_KIND

DOCS = {**BY_KIND, "dog": ("강아지가 공원에서 공을 쫓는다", {"kind": "pet"})}
ASKS: list[tuple[str, dict[str, Any] | None]] = [
    ("과일", None),
    ("고양이 낮잠", None),
    ("시장 주식", {"kind": "news"}),
    ("공원 강아지", {"kind": "pet"}),
]


@pytest.fixture
def collection(postgres_url: str, encoder):
    made = Collection.create("apart", backend=postgres_url, encoder=encoder, index="hnsw")
    ids = list(DOCS)
    made.add(ids, [DOCS[i][0] for i in ids], [DOCS[i][1] for i in ids])
    yield made
    made.store.drop()  # type: ignore[attr-defined]
    made.close()


def _results(collection: Collection) -> list[list[tuple[str, float]]]:
    return [
        [(h.id, round(h.score, 5)) for h in collection.search(q, 4, mode="hybrid", filter=f)] for q, f in ASKS
    ]


def test_the_dense_query_runs_on_a_second_thread_and_connection_with_the_same_results(
    collection: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    twin = collection.dense.apart()
    assert twin is not None and twin is collection.dense.apart()  # made once
    seen: list[tuple[str, Any]] = []
    search = twin.search

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append((threading.current_thread().name, twin.store.conn))
        return search(*args, **kwargs)

    monkeypatch.setattr(twin, "search", spy)
    together = _results(collection)
    assert len(seen) == len(ASKS)
    main = collection.store.conn  # type: ignore[attr-defined]
    assert all(name.startswith("munjang-dense") and conn is not main for name, conn in seen)

    monkeypatch.setattr(collection.dense, "apart", lambda: None)
    alone = _results(collection)
    assert together == alone
    assert all(hits for hits in alone)


def test_threads_searching_at_once_share_one_second_connection_and_answer_alike(
    collection: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = _results(collection)
    store = collection.store
    monkeypatch.setattr(store, "_beside", None)  # as just opened: every thread races to open it
    opened: list[Any] = []
    connect = postgres_store.connect

    def counted(url: str) -> Any:
        opened.append(url)
        return connect(url)

    monkeypatch.setattr(postgres_store, "connect", counted)
    monkeypatch.setattr(collection.dense, "_twin", None)
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: _results(collection), range(12)))
    assert all(answer == want for answer in answers)
    assert len(opened) == 1
    store._beside.close()  # type: ignore[attr-defined]


def test_no_dense_search_runs_apart_inside_a_write_transaction(collection: Collection) -> None:
    with collection.store.transaction():
        assert collection.dense.apart() is None
    assert collection.dense.apart() is not None


def test_an_error_on_either_side_leaves_both_connections_usable(
    collection: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = _results(collection)
    twin = collection.dense.apart()
    assert twin is not None

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the lexical side failed")

    with monkeypatch.context() as patch:
        patch.setattr(collection.lexical, "search_where", broken)
        with pytest.raises(RuntimeError, match="lexical side"):
            collection.search("과일", 4, mode="hybrid")
    with monkeypatch.context() as patch:
        patch.setattr(twin, "search", lambda *a, **k: broken())
        with pytest.raises(RuntimeError, match="lexical side"):  # raised on the dense thread
            collection.search("과일", 4, mode="hybrid")
    assert _results(collection) == want


def test_closing_closes_the_second_connection(postgres_url: str, encoder) -> None:
    made = Collection.create("apart_close", backend=postgres_url, encoder=encoder)
    try:
        made.add(["a", "b"], ["사과는 과일이다", "주식 시장"])
        assert made.search("과일", 1, mode="hybrid")[0].id == "a"
        second = made.store._beside.conn  # type: ignore[attr-defined]
        assert second is not None and not second.closed
    finally:
        made.store.drop()  # type: ignore[attr-defined]
        made.close()
    assert second.closed
