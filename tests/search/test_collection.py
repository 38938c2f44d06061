"""Persistent collections: add / upsert / delete, filters, re-open, cache, modes, readers, bad input.

The API tests run against both backends (a folder, and PostgreSQL + pgvector started by pgserver)
with the same assertions; tests of the folder's own files run on the embedded backend only."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from munjang import load_cross_encoder
from munjang.search.backends.base import CollectionError
from munjang.search.collection.collection import Collection
from munjang.search.index.exact import top_k_exact
from munjang.search.index.fusion import normalize_scores
from tests.helpers.collection_backends import Backend
from tests.helpers.training import tiny_bert

DOCS = {
    "ko-1": ("서울은 대한민국의 수도이다.", {"lang": "ko", "year": 2020, "tags": "city"}),
    "ko-2": ("고양이가 소파 위에서 잠을 잔다.", {"lang": "ko", "year": 2018}),
    "ko-3": ("주식 시장이 오늘 크게 하락했다.", {"lang": "ko", "year": 2022, "source": None}),
    "en-1": ("A man is playing the guitar on stage.", {"lang": "en", "year": 2019}),
    "en-2": ("The stock market fell sharply today.", {"lang": "en", "year": 2021}),
    "en-3": ("A cat sleeps on the sofa.", {"lang": "en", "year": 2015}),
}


def _fill(col: Collection) -> None:
    ids = list(DOCS)
    col.add(ids, [DOCS[i][0] for i in ids], [DOCS[i][1] for i in ids])


@pytest.fixture
def col(backend: Backend, encoder) -> Collection:
    c = backend.create("col", encoder=encoder)
    _fill(c)
    yield c
    c.close()


def test_dense_search_equals_exact_search_over_the_encoded_documents(col: Collection, encoder) -> None:
    queries = ["guitar music", "stock prices dropped", "고양이"]
    texts = [DOCS[i][0] for i in DOCS]
    want_rows, want_scores = top_k_exact(encoder.encode(queries), encoder.encode(texts), 6)
    results = col.search(queries, k=6)
    for hits, rows, scores in zip(results, want_rows, want_scores, strict=True):
        assert [h.id for h in hits] == [list(DOCS)[r] for r in rows]
        np.testing.assert_allclose([h.score for h in hits], scores, atol=1e-5)
    top = col.search("guitar music", k=1)[0]
    assert top.id == "en-1" and top.metadata == DOCS["en-1"][1] and top.text == DOCS["en-1"][0]


def test_reopen_keeps_everything(backend: Backend, encoder) -> None:
    with backend.create("c", encoder=encoder) as c:
        _fill(c)
        before = c.search("a sleeping cat", k=3, mode="hybrid")
    with backend.open("c", encoder=encoder) as c:
        assert len(c) == 6 and "ko-2" in c and "nope" not in c
        assert list(c.ids()) == list(DOCS)
        after = c.search("a sleeping cat", k=3, mode="hybrid")
        if backend.kind == "qdrant":  # local mode reloads its vectors in float64: the 8th digit moves
            assert [(h.id, h.text, h.metadata) for h in after] == [(h.id, h.text, h.metadata) for h in before]
            assert [h.score for h in after] == pytest.approx([h.score for h in before], abs=1e-6)
        else:
            assert after == before
        assert c.check() == []
        doc = c.get(["ko-3", "missing"])
        assert doc[0] is not None and doc[0].metadata == {"lang": "ko", "year": 2022, "source": None}
        assert doc[1] is None


def test_add_conflicts_upsert_and_the_embedding_cache(col: Collection) -> None:
    with pytest.raises(CollectionError, match="1 ids already in the collection"):
        col.add(["new", "ko-1"], ["새 문서", "다른 텍스트"])
    assert "new" not in col  # checked before anything is written
    skipped = col.add(["new", "ko-1"], ["새 문서", "다른 텍스트"], on_conflict="skip")
    assert (skipped.added, skipped.skipped, skipped.encoded) == (1, 1, 1)
    assert col.get(["ko-1"])[0].text == DOCS["ko-1"][0]  # type: ignore[union-attr]
    meta = col.upsert(["ko-1"], [DOCS["ko-1"][0]], [{"lang": "ko", "year": 1999}])
    assert (meta.updated, meta.encoded) == (1, 0)
    assert col.search("수도", k=1, mode="lexical", filter={"year": 1999})[0].id == "ko-1"
    changed = col.upsert(["en-1"], ["A violinist performs in an orchestra."])
    assert (changed.updated, changed.encoded) == (1, 1)
    assert col.search("violin concert", k=1)[0].id == "en-1"
    assert all(h.id != "en-1" for h in col.search("guitar", k=3, mode="lexical"))
    # Deleting then re-adding the same text costs no encoding: the cache is keyed by (model, text).
    assert col.delete(["en-3", "missing"]) == 1
    assert all(h.id != "en-3" for h in col.search("A cat sleeps on the sofa.", k=7))
    again = col.add(["en-3b"], [DOCS["en-3"][0]])
    assert again.encoded == 0
    assert col.search("A cat sleeps on the sofa.", k=1)[0].id == "en-3b"
    assert col.check() == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"lang": "ko"}, {"ko-1", "ko-2", "ko-3"}),
        ({"year": {"$gte": 2020}}, {"ko-1", "ko-3", "en-2"}),
        ({"year": {"$gt": 2015, "$lt": 2020}}, {"ko-2", "en-1"}),
        ({"lang": {"$in": ["en"]}, "year": {"$ne": 2015}}, {"en-1", "en-2"}),
        ({"$or": [{"tags": "city"}, {"year": 2015}]}, {"ko-1", "en-3"}),
        ({"source": {"$exists": True}}, {"ko-3"}),
        ({"tags": {"$ne": "city"}}, set(DOCS) - {"ko-1"}),
        ({"tags": {"$nin": ["city"]}}, set(DOCS) - {"ko-1"}),
        ({"$not": {"lang": "ko"}}, {"en-1", "en-2", "en-3"}),
        ({"lang": "fr"}, set()),
    ],
)
def test_filters_select_exactly_the_matching_documents(col: Collection, spec, expected) -> None:
    for mode in ("dense", "lexical", "hybrid"):
        hits = col.search("시장 market 고양이 cat 서울 guitar", k=10, mode=mode, filter=spec)
        assert {h.id for h in hits} <= expected
    assert {h.id for h in col.search("anything", k=10, filter=spec)} == expected


def test_bad_filters_are_named(col: Collection) -> None:
    with pytest.raises(ValueError, match="bad filter key"):
        col.search("x", filter={"a'; DROP TABLE documents; --": 1})
    with pytest.raises(ValueError, match="unknown filter operator"):
        col.search("x", filter={"year": {"$regex": "2"}})
    with pytest.raises(ValueError, match="non-empty list"):
        col.search("x", filter={"year": {"$in": []}})
    assert len(col) == 6


def test_lexical_search_uses_korean_morphology(col: Collection) -> None:
    # "주식이" / "하락한" only match "주식" / "하락" after morphological analysis.
    hits = col.search("주식이 하락한 이유", k=3, mode="lexical")
    assert hits[0].id == "ko-3" and hits[0].scores["lexical"] > 0
    assert col.search("zebra", k=3, mode="lexical") == []


def test_hybrid_fuses_both_lists_per_query_settings(col: Collection) -> None:
    rrf = col.search("stock market", k=6, mode="hybrid", fusion="rrf", weights=[1.0, 1.0])
    assert rrf[0].id == "en-2"
    assert {"dense", "lexical", "fused"} <= set(rrf[0].scores)
    assert rrf[0].scores["fused"] == pytest.approx(1 / 61 + 1 / 61)
    dense_only = col.search("stock market", k=6, mode="hybrid", fusion="weighted", weights=[1.0, 0.0])
    assert [h.id for h in dense_only] == [h.id for h in col.search("stock market", k=6)]
    # The default: each list's scores z-scored, then added with equal weights.
    default = col.search("stock market", k=6, mode="hybrid")
    dense = {h.id: h.score for h in col.search("stock market", k=100, mode="dense")}
    lexical = {h.id: h.score for h in col.search("stock market", k=100, mode="lexical")}
    z_dense = dict(zip(dense, normalize_scores(list(dense.values()), "zscore"), strict=True))
    z_lexical = dict(zip(lexical, normalize_scores(list(lexical.values()), "zscore"), strict=True))
    for hit in default:
        want = 0.5 * z_dense[hit.id] + 0.5 * z_lexical.get(hit.id, min(z_lexical.values()))
        assert hit.scores["fused"] == pytest.approx(want)
    assert default[0].id == "en-2"
    with pytest.raises(ValueError, match="unknown fusion"):
        col.search("x", mode="hybrid", fusion="max")
    with pytest.raises(ValueError, match="unknown mode"):
        col.search("x", mode="fuzzy")
    with pytest.raises(ValueError, match="no sparse retriever"):
        col.search("x", mode="sparse")


def test_rerank_orders_by_the_cross_encoder(col: Collection, tmp_path: Path) -> None:
    cross = load_cross_encoder(tiny_bert(tmp_path / "ce", dropout=0.0), device="cpu")
    hits = col.search("market news", k=4, mode="hybrid", rerank=cross, rerank_k=6)
    texts = [h.text for h in hits]
    scores = cross.predict([("market news", t) for t in texts])
    np.testing.assert_allclose([h.scores["rerank"] for h in hits], scores, atol=1e-6)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    best = max(DOCS.values(), key=lambda d: float(cross.predict([("market news", d[0])])[0]))
    assert hits[0].text == best[0]


def test_a_second_handle_sees_each_commit(backend: Backend, encoder) -> None:
    writer = backend.create("c", encoder=encoder)
    reader = backend.open("c", encoder=encoder, readonly=True)
    assert reader.search("guitar", k=3) == []
    _fill(writer)
    assert reader.search("guitar", k=1)[0].id == "en-1"
    assert reader.search("고양이", k=1, mode="lexical")[0].id == "ko-2"
    writer.delete(["en-1"])
    assert all(h.id != "en-1" for h in reader.search("guitar", k=6))
    with pytest.raises(CollectionError, match="read-only"):
        reader.add(["x"], ["text"])
    reader.close()
    writer.close()


def test_hnsw_collection_saves_and_catches_up(tmp_path: Path, encoder) -> None:
    folder = tmp_path / "h"
    with Collection.create(folder, encoder=encoder, index="hnsw") as c:
        _fill(c)
    saved = sorted(p.name for p in folder.glob("dense-*.hnsw"))
    assert saved == ["dense-6-0.hnsw"]
    # Changes after the last save (here: the process "dies" without close) are replayed on open.
    c = Collection.open(folder, encoder=encoder)
    stale = folder / ".dense-6-0.hnsw.999-abcd.tmp.hnsw"  # what a save killed midway leaves behind
    stale.write_bytes(b"partial")
    c.add(["late"], ["A late guitar solo."])
    c.delete(["en-1"])
    c.store.close()
    with Collection.open(folder, encoder=encoder) as again:
        assert again.dense.saved.label == 6 and stale.exists()
        again.flush()
        assert not stale.exists() and sorted(p.name for p in folder.glob("dense-*.hnsw")) == [
            "dense-7-1.hnsw"
        ]
        assert again.check() == []
        hits = again.search("guitar solo", k=6)
        assert hits[0].id == "late" and "en-1" not in {h.id for h in hits}
        assert again.search("stock", k=2, filter={"lang": "en"})[0].id == "en-2"


def test_an_hnsw_reader_keeps_the_saved_graph_mapped_and_follows_the_writers_saves(
    tmp_path: Path, encoder, monkeypatch
) -> None:
    # A reader maps the saved graph (no read of it) and puts what the writer changed since beside
    # it: added passages in an exact tail, deleted ones masked. When the writer saves a new graph,
    # the reader maps that one. Only far past the save (here: any deletion) does it read one in.
    from munjang.search.followers import dense as live_index
    from munjang.search.index.viewed_graph import ViewedGraph

    folder = tmp_path / "h"
    with Collection.create(folder, encoder=encoder, index="hnsw") as c:
        _fill(c)
    reader = Collection.open(folder, encoder=encoder, readonly=True)
    with Collection.open(folder, encoder=encoder) as fresh:
        expected = [(h.id, h.score) for h in fresh.search("guitar solo", k=4)]
    assert [(h.id, h.score) for h in reader.search("guitar solo", k=4)] == expected
    viewed = reader.dense.index
    assert isinstance(viewed, ViewedGraph) and viewed.graph.is_view and len(viewed.tail) == 0

    writer = Collection.open(folder, encoder=encoder)
    writer.add(["late"], ["A late guitar solo."])
    writer.delete(["en-1"])  # no save yet: far fewer changes than a save waits for
    assert sorted(p.name for p in folder.glob("dense-*.hnsw")) == ["dense-6-0.hnsw"]
    hits = reader.search("guitar solo", k=5)
    assert reader.dense.index is viewed and viewed.graph.is_view
    assert len(viewed.tail) == 1 and viewed.dead == 1 and len(viewed) == 6
    want = writer.search("guitar solo", k=5)
    assert [h.id for h in hits] == [h.id for h in want] and hits[0].id == "late"
    np.testing.assert_allclose([h.score for h in hits], [h.score for h in want], rtol=1e-5)
    assert reader.check() == []

    writer.close()  # saves dense-7-1.hnsw and removes the viewed file
    assert sorted(p.name for p in folder.glob("dense-*.hnsw")) == ["dense-7-1.hnsw"]
    with Collection.open(folder, encoder=encoder) as writer:
        writer.add(["later"], ["Another guitar on another stage."])
    hits = reader.search("guitar solo", k=6)
    followed = reader.dense.index
    assert isinstance(followed, ViewedGraph) and followed.graph.is_view and reader.dense.saved.label == 8
    assert len(followed.tail) == 0 and {"late", "later"} <= {h.id for h in hits}
    assert "en-1" not in {h.id for h in hits} and reader.check() == []

    monkeypatch.setattr(live_index, "MASK_LIMIT", 0)
    with Collection.open(folder, encoder=encoder) as writer:
        writer.delete(["en-2"])
        writer.dense.save = lambda folder: None  # type: ignore[method-assign]  # keep the old graph
    hits = reader.search("stock", k=4)
    assert not isinstance(reader.dense.index, ViewedGraph) and not reader.dense.index.is_view
    assert "en-2" not in {h.id for h in hits} and reader.check() == []
    reader.close()


def test_hnsw_collection_ranks_everything_exactly_when_asked_for_everything(
    tmp_path: Path, encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Collection.create(tmp_path / "h", encoder=encoder, index="hnsw") as c:
        _fill(c)
        # A graph that reaches nothing: only an exhaustive pass can still rank every document.
        monkeypatch.setattr(
            type(c.dense.index),
            "search",
            lambda self, q, k, expansion=None: (
                np.full((len(q), k), -1, dtype=np.int64),
                np.full((len(q), k), -np.inf, dtype=np.float32),
            ),
        )
        hits = c.search("a sleeping cat", k=len(c))
        assert sorted(h.id for h in hits) == sorted(DOCS) and hits[0].id == "en-3"
        assert c.search("a sleeping cat", k=3) == []  # fewer than all: the graph is asked


def test_bad_input_is_named_and_writes_nothing(backend: Backend, encoder) -> None:
    with pytest.raises(CollectionError, match="no such collection"):
        backend.open("missing")
    c = backend.create("c", encoder=encoder)
    with pytest.raises(CollectionError, match="already exists"):
        backend.create("c", encoder=encoder)
    with pytest.raises(ValueError, match="text is empty"):
        c.add(["a"], ["  "])
    with pytest.raises(TypeError, match="not str"):
        c.add(["a"], [3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="appears twice"):
        c.add(["a", "a"], ["x", "y"])
    with pytest.raises(ValueError, match="JSON"):
        c.add(["a"], ["x"], [{"v": float("nan")}])
    with pytest.raises(ValueError, match="2 ids for 1 texts"):
        c.add(["a", "b"], ["x"])
    with pytest.raises(ValueError, match="query 0 is empty"):
        c.search(" ")
    assert len(c) == 0 and c.check() == []
    c.close()
    with pytest.raises(ValueError, match="unknown index"):
        backend.create("x", encoder=encoder, index="ivf")
    with pytest.raises(CollectionError, match="no such collection"):
        backend.open("x")


def test_hnsw_search_matches_exact_search_with_and_without_filters(backend: Backend, encoder) -> None:
    exact = backend.create("exact", encoder=encoder)
    approx = backend.create("approx", encoder=encoder, index="hnsw")
    for c in (exact, approx):
        _fill(c)
    for query in ("guitar music", "stock prices dropped", "고양이"):
        want = exact.search(query, k=6)
        got = approx.search(query, k=6)
        assert [h.id for h in got] == [h.id for h in want]
        np.testing.assert_allclose([h.score for h in got], [h.score for h in want], atol=1e-5)
        selective = approx.search(query, k=6, filter={"year": 2015})
        assert [h.id for h in selective] == ["en-3"]
        assert {h.id for h in approx.search(query, k=6, filter={"lang": "ko"})} == {"ko-1", "ko-2", "ko-3"}
    assert approx.info()["index"] == "hnsw" and approx.check() == []
    exact.close()
    approx.close()


def test_bad_folders_are_named(tmp_path: Path, encoder) -> None:
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "collection.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CollectionError, match="cannot open|not a munjang"):
        Collection.open(tmp_path / "junk")
    other = tmp_path / "other"
    other.mkdir()
    sqlite3.connect(other / "collection.db").execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(CollectionError, match="not a munjang collection"):
        Collection.open(other)
    with pytest.raises(ValueError, match="unknown index"):
        Collection.create(tmp_path / "x", encoder=encoder, index="ivf")
    assert not (tmp_path / "x").exists()


def test_a_collection_keeps_its_tokenizer_config(encoder, tmp_path: Path) -> None:
    # New collections record the tokenizer's whole config (Kiwi without its multi-word dictionary);
    # one saved before that records only a name and keeps tokenizing with the dictionary it had.
    col = Collection.create(tmp_path / "c", encoder=encoder)
    assert col.info()["lexical"]["tokenizer"]["kiwi"]["multi_words"] is False
    col.add(["new"], ["뉴 노멀 시대"])
    col.config["lexical"]["tokenizer"] = "auto"  # the config as an older munjang saved it
    col.add(["old"], ["뉴 노멀 시대"])
    _, ids, tokens = col.store.tokens()
    assert dict(zip(ids, map(tuple, tokens), strict=True)) == {
        "new": ("뉴", "노멀", "시대"),
        "old": ("뉴 노멀", "시대"),
    }
    assert [h.id for h in col.search("뉴 노멀", mode="lexical")] == ["old"]
    col.close()
    with pytest.raises(ValueError, match="cannot rebuild"):
        Collection.create(tmp_path / "d", encoder=encoder, tokenizer={"name": "mine"})
