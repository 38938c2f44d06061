"""Documents longer than a passage: split into passages, searched as documents, deleted and replaced
whole, and collections written before passages existed upgraded in place. Both backends."""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from munjang.search.backends.folder.sqlite_store import DocumentStore
from munjang.search.collection.collection import Collection
from munjang.search.collection.passages import ChunkingConfig
from munjang.search.collection.search import Searcher
from tests.helpers.collection_backends import Backend
from tests.helpers.documents import SENTENCES, numbered

LONG = " ".join(SENTENCES * 3)  # well over a 32-token passage
SHORT = "강아지가 공을 쫓는다."
SMALL = {"max_tokens": 32, "overlap_tokens": 0}


def _passages(col: Collection, doc_id: str) -> list:
    labels = col.store.labels_matching(*col_filter(col, {}))
    docs = col.store.documents(labels.tolist())
    return sorted((d for d in docs.values() if d.id == doc_id), key=lambda d: d.chunk)


def col_filter(col: Collection, spec: dict) -> tuple[str, list]:
    from munjang.search.backends.filters import compile_filter

    return compile_filter(spec or None, dialect=col.store.dialect)


def test_a_long_document_becomes_passages_that_tile_it_and_search_returns_the_document_once(
    backend: Backend, encoder
) -> None:
    with backend.create("docs", encoder=encoder, chunking=SMALL) as col:
        col.add(["long", "short"], [LONG, SHORT], [{"kind": "long"}, {"kind": "short"}])
        assert len(col) == 2 and list(col.ids()) == ["long", "short"]
        info = col.info()
        parts = _passages(col, "long")
        assert info["passages"] == len(parts) + len(_passages(col, "short")) and len(parts) > 3
        # Passages tile the document exactly: every character is in one, in order.
        assert parts[0].start == 0 and parts[-1].end == len(LONG)
        for a, b in itertools.pairwise(parts):
            assert a.end == b.start
        assert all(p.text == LONG[p.start : p.end] for p in parts)
        count = col.encoding.planner.count  # type: ignore[union-attr]
        assert max(count([p.text for p in parts])) <= 32
        # get() gives the whole document back, not a passage.
        assert col.get(["long"])[0].text == LONG  # type: ignore[union-attr]
        hits = col.search("제주도 한라산 화산섬", k=5, mode="hybrid")
        assert [h.id for h in hits].count("long") == 1
        top = next(h for h in hits if h.id == "long")
        assert top.text == LONG[top.start : top.end] and "한라산" in top.text
        assert top.metadata == {"kind": "long"}
        passages = col.search("제주도 한라산 화산섬", k=50, mode="lexical", unit="passage")
        assert len([h for h in passages if h.id == "long"]) > 1
        summed = col.search("서울", k=2, mode="lexical", aggregate="sum")
        assert summed[0].id == "long" and summed[0].score > col.search("서울", k=1, mode="lexical")[0].score
        terms = col.matched_terms("한라산 고양이", [top])[0]
        assert set(terms) <= {"한라산", "고양이"} and terms


def test_delete_and_upsert_act_on_whole_documents(backend: Backend, encoder) -> None:
    with backend.create("docs", encoder=encoder, chunking=SMALL) as col:
        col.add(["long", "short"], [LONG, SHORT])
        before = col.info()["passages"]
        assert col.upsert(["long"], [" ".join(SENTENCES[:4])]).updated == 1
        after = col.info()["passages"]
        assert 1 < after < before and len(col) == 2
        assert col.get(["long"])[0].text == " ".join(SENTENCES[:4])  # type: ignore[union-attr]
        assert all("제주도" not in h.text for h in col.search("제주도 한라산", k=5, mode="lexical"))
        assert col.delete(["long"]) == 1
        assert len(col) == 1 and col.info()["passages"] == len(_passages(col, "short"))
        assert col.check() == []
        assert [h.id for h in col.search("서울 한강", k=5, mode="hybrid")] == ["short"]
        # Metadata alone changes in place on every passage, and filters see it.
        col.add(["long"], [LONG], [{"n": 1}])
        col.upsert(["long"], [LONG], [{"n": 2}])
        hits = col.search("제주도", k=5, mode="lexical", filter={"n": 2})
        assert [h.id for h in hits] == ["long"]
        assert col.search("제주도", k=5, mode="lexical", filter={"n": 1}) == []


def test_bm25_counts_a_window_once_however_many_passages_share_it(backend: Backend, encoder) -> None:
    from munjang.search.index.bm25 import BM25Index

    page = " ".join(SENTENCES[:4])  # one window, several 32-token passages reading it
    with backend.create("docs", encoder=encoder, chunking={"max_tokens": 32, "overlap_tokens": 0}) as col:
        col.add(
            ["page", "a", "b"],
            [page, "서울의 지하철 노선", "부산 바다와 서울 사이"],
            [{"kind": "long"}, {"kind": "short"}, {"kind": "short"}],
        )
        passages = _passages(col, "page") + _passages(col, "a") + _passages(col, "b")
        stored = col.store.tokens_of([p.label for p in passages])
        texts = list(dict.fromkeys(tuple(stored[p.label]) for p in passages))
        assert len(passages) >= len(texts) + 2  # passages of the page share its window's tokens
        query = col.encoding.tokenizer()("서울 바다")
        once = BM25Index(**col.config["lexical"])
        once.index_tokens([list(t) for t in texts])
        score = dict(zip(texts, once.get_scores_tokens(query), strict=True))
        per_passage = BM25Index(**col.config["lexical"])
        per_passage.index_tokens([stored[p.label] for p in passages])
        assert not np.allclose(per_passage.get_scores_tokens(query)[-1], score[texts[-1]])
        hits = col.search("서울 바다", k=20, mode="lexical", unit="passage")
        assert {(h.id, h.chunk): h.score for h in hits} == pytest.approx(
            {(p.id, p.chunk): score[tuple(stored[p.label])] for p in passages}
        )
        # A filter restricts the hits, never the scores; k counts passages.
        short = col.search("서울 바다", k=20, mode="lexical", unit="passage", filter={"kind": "short"})
        assert {h.id: h.score for h in short} == pytest.approx(
            {p.id: score[tuple(stored[p.label])] for p in passages if p.id != "page"}
        )
        assert len(col.search("서울 바다", k=2, mode="lexical", unit="passage")) == 2


def test_the_title_is_carried_into_every_passage(backend: Backend, encoder) -> None:
    with backend.create("docs", encoder=encoder, chunking=SMALL) as col:
        col.add(["long"], [LONG], [{"title": "여행 안내서"}])
        parts = _passages(col, "long")
        tokens = col.store.tokens_of([p.label for p in parts])
        assert all("여행" in tokens[p.label] for p in parts)
        # A changed title is a changed document: its passages are encoded again.
        assert col.upsert(["long"], [LONG], [{"title": "관광 책자"}]).encoded > 0


def test_without_options_passages_are_small_and_bm25_reads_their_window(
    tmp_path: Path, e5_path: Path
) -> None:
    col = Collection.create(tmp_path / "e5", str(e5_path))
    assert col.chunking == ChunkingConfig() and col.chunking.max_tokens == 128
    page = numbered(20)  # about 2,000 tokens
    col.add(["page", "line"], [page, SHORT])
    parts = _passages(col, "page")
    assert len(parts) >= 15 and len(_passages(col, "line")) == 1
    # BM25 reads each passage with its window: the first two passages share the first window's tokens,
    # which hold the words of both.
    tokens = col.store.tokens_of([p.label for p in parts])
    assert tokens[parts[0].label] == tokens[parts[1].label] and len(set(map(tuple, tokens.values()))) >= 4
    # The end of the page is searchable: its last passage is what a dense search for it finds.
    tail = page[parts[-1].start :]
    hit = col.search(tail[-200:], k=1, mode="dense")[0]
    assert hit.id == "page" and hit.chunk == parts[-1].chunk
    col.close()


def test_a_collection_written_before_passage_budgets_keeps_window_passages(
    tmp_path: Path, e5_path: Path
) -> None:
    folder = tmp_path / "old"
    Collection.create(folder, str(e5_path)).close()
    conn = sqlite3.connect(folder / "collection.db")
    old = {"enabled": True, "max_tokens": None, "overlap_tokens": 32, "title_field": "title", "late": False}
    conn.execute("UPDATE meta SET value = ? WHERE key = 'chunking'", (json.dumps(old),))
    conn.commit()
    conn.close()
    with Collection.open(folder) as col:
        assert col.chunking.max_tokens is None and col.chunking.lexical_context == "passage"
        page = numbered(20)
        col.add(["page"], [page])
        parts = _passages(col, "page")
        assert 3 <= len(parts) <= 6  # windows of e5-small, as the collection was built
        assert col.info()["chunking"]["lexical_context"] == "passage"


def test_bad_chunking_settings_are_refused(tmp_path: Path, encoder) -> None:
    for bad in ({"max_tokens": 4}, {"overlap_tokens": -1}, {"size": 3}, {"max_tokens": True}):
        with pytest.raises(ValueError, match="chunking"):
            Collection.create(tmp_path / "bad", encoder=encoder, chunking=bad)
    assert not (tmp_path / "bad").exists()


V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents (label INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
    text TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT '{}', text_hash TEXT NOT NULL,
    tokens TEXT NOT NULL DEFAULT '[]');
CREATE TABLE embeddings (model TEXT NOT NULL, text_hash TEXT NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)) WITHOUT ROWID;
CREATE TABLE deletions (seq INTEGER PRIMARY KEY AUTOINCREMENT, label INTEGER NOT NULL);
"""


def _version_1_folder(folder: Path, encoder: Any) -> None:
    """Build a collection with this munjang, then rewrite its database as version 1 stored it."""
    with Collection.create(folder, encoder=encoder) as col:
        col.add(["a", "b", "c"], ["서울의 지하철", "부산의 바다", "고양이의 잠"])
        col.delete(["c"])
        config = col.config
    db = folder / "collection.db"
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT label, id, text, metadata, text_hash, tokens FROM documents").fetchall()
    vectors = conn.execute("SELECT model, text_hash, vector FROM embeddings").fetchall()
    conn.close()
    db.unlink()
    conn = sqlite3.connect(db)
    conn.executescript(V1_SCHEMA)
    meta = {**{k: v for k, v in config.items() if k != "chunking"}, "schema_version": 1}
    conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
    conn.executemany("INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.executemany("INSERT INTO embeddings VALUES (?, ?, ?)", vectors)
    conn.execute("INSERT INTO deletions (label) VALUES (3)")
    conn.execute("UPDATE sqlite_sequence SET seq = 3 WHERE name = 'documents'")
    conn.commit()
    conn.close()


def test_a_version_1_collection_is_upgraded_in_place_with_its_labels(tmp_path: Path, encoder) -> None:
    folder = tmp_path / "old"
    _version_1_folder(folder, encoder)
    with pytest.raises(Exception, match="without read-only to upgrade"):
        Collection.open(folder, encoder=encoder, readonly=True)
    with Collection.open(folder, encoder=encoder) as col:
        assert col.config["schema_version"] == 2 and len(col) == 2 and col.check() == []
        assert col.search("바다", k=1, mode="lexical")[0].id == "b"
        col.add(["d"], [LONG])
        assert col.get(["d"])[0].label == 4  # type: ignore[union-attr]  # label 3 is never reused
    with Collection.open(folder, encoder=encoder, readonly=True) as reader:
        reader.dense.sync(reader.store)
        labels = np.sort(reader.dense.index.ids())
    assert labels[:2].tolist() == [1, 2] and 3 not in labels and labels[2] == 4


def test_a_writer_that_read_version_1_before_another_upgraded_does_not_upgrade_again(
    tmp_path: Path, encoder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "old"
    _version_1_folder(folder, encoder)
    spans = "SELECT chunk, span_start, span_end FROM documents WHERE id = 'long' ORDER BY label"
    with Collection.open(folder, encoder=encoder) as first:  # upgrades, then stores passages
        first.add(["long"], [LONG])
    with sqlite3.connect(folder / "collection.db") as conn:
        passages = conn.execute(spans).fetchall()
    assert len(passages) > 1 and passages[1][0] == 1
    # A second writer that opened at the same moment read version 1 before the upgrade committed.
    real = DocumentStore._schema_version
    stale: set[int] = set()

    def schema_version(store: DocumentStore) -> Any:
        if id(store) not in stale:
            stale.add(id(store))
            return 1
        return real(store)

    monkeypatch.setattr(DocumentStore, "_schema_version", schema_version)
    with Collection.open(folder, encoder=encoder) as second:
        assert second.check() == []
    with sqlite3.connect(folder / "collection.db") as conn:
        assert conn.execute(spans).fetchall() == passages  # an upgrade again would drop the spans


def test_late_chunking_pools_each_passage_from_a_pass_over_its_window(tmp_path: Path, e5_path: Path) -> None:
    from munjang import load_encoder

    e5 = load_encoder(str(e5_path))
    late = Collection.create(tmp_path / "late", str(e5_path), encoder=e5, chunking={**SMALL, "late": True})
    plain = Collection.create(tmp_path / "plain", str(e5_path), encoder=e5, chunking=SMALL)
    for col in (late, plain):
        col.add(["long", "short"], [LONG, SHORT])
    parts = _passages(late, "long")
    assert [(p.start, p.end) for p in parts] == [(p.start, p.end) for p in _passages(plain, "long")]
    labels = np.array([p.label for p in parts])
    a = late.store.vectors_of(late.config["model"], late.config["dim"], labels)
    b = plain.store.vectors_of(plain.config["model"], plain.config["dim"], labels)
    cosines = (a * b).sum(axis=1)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    # Each late vector has read its neighbours: near its passage's own vector, never equal to it.
    assert (cosines > 0.75).all() and (cosines < 0.99).all()
    # A document that fits one passage is encoded on its own either way.
    short = [p.label for p in _passages(late, "short")]
    np.testing.assert_allclose(
        late.store.vectors_of(late.config["model"], late.config["dim"], np.array(short)),
        plain.store.vectors_of(plain.config["model"], plain.config["dim"], np.array(short)),
        atol=1e-6,
    )
    assert late.search("제주도 한라산", k=1, mode="dense")[0].id == "long"
    # Re-adding costs nothing: late vectors are cached under the document and the passage's span.
    assert late.upsert(["long"], [LONG]).encoded == 0
    late.close()
    plain.close()


def test_late_chunking_refuses_a_model_that_does_not_mean_pool(tmp_path: Path) -> None:
    from munjang import load_encoder

    cls_model = load_encoder(pooling="cls")
    col = Collection.create(tmp_path / "cls", encoder=cls_model, chunking={**SMALL, "late": True})
    with pytest.raises(ValueError, match="late chunking needs a model that mean-pools"):
        col.add(["long"], [LONG])
    assert len(col) == 0
    col.close()


def test_a_search_reads_the_documents_of_its_best_hits_not_of_every_candidate(
    tmp_path: Path, encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [" ".join(SENTENCES[i:] + SENTENCES[:i]) for i in range(len(SENTENCES))]
    col = Collection.create(tmp_path / "c", encoder=encoder, chunking=SMALL)
    col.add([f"d{i}" for i in range(len(texts))], texts)
    pool = len(col.store.labels_matching(*col_filter(col, {})))
    read: list[int] = []
    documents = col.store.documents

    def counted(labels: list[int]) -> dict:
        read.append(len(labels))
        return documents(labels)

    def read_everything(self: Searcher, ranked: list, need: int, grouped: bool, aggregate: str) -> tuple:
        docs = documents([label for label, _, _ in ranked])
        return [r for r in ranked if r[0] in docs], docs

    for mode, unit, aggregate in [
        ("hybrid", "document", "max"), ("dense", "document", "max"), ("lexical", "passage", "max"),
        ("hybrid", "document", "sum"),
    ]:  # fmt: skip
        read.clear()
        with monkeypatch.context() as patch:
            patch.setattr(col.store, "documents", counted)
            got = col.search("제주도 한라산", k=2, mode=mode, unit=unit, aggregate=aggregate)
        with monkeypatch.context() as patch:
            patch.setattr(Searcher, "_head", read_everything)
            want = col.search("제주도 한라산", k=2, mode=mode, unit=unit, aggregate=aggregate)
        assert [(h.id, h.score, h.text) for h in got] == [(h.id, h.score, h.text) for h in want]
        assert len(got) == 2 and (sum(read) == pool if aggregate == "sum" else sum(read) < pool / 2)
    col.close()


def test_passages_fetched_per_document_grow_with_the_share_of_later_passages() -> None:
    from munjang.search.backends.base import Counts
    from munjang.search.collection.search import PASSAGES_PER_DOCUMENT, passages_to_fetch

    assert passages_to_fetch(100, None) == 100 * PASSAGES_PER_DOCUMENT  # counts unknown: the most
    assert passages_to_fetch(100, Counts(1000, 1000)) == 100
    assert passages_to_fetch(100, Counts(1_000_000, 1_000_283)) == 101  # a few long documents
    assert passages_to_fetch(100, Counts(95, 100)) == 250  # half way to a tenth
    assert passages_to_fetch(100, Counts(90, 100)) == passages_to_fetch(100, Counts(10, 100)) == 400


def test_a_collection_of_short_documents_and_one_long_fetches_fewer_passages_and_ranks_the_same(
    tmp_path: Path, encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import munjang.search.collection.search as search

    short = [" ".join([*s.split()[:2], f"{i}"]) for i, s in enumerate(SENTENCES * 16)]
    texts = [*short, " ".join(SENTENCES[:2])]
    col = Collection.create(tmp_path / "c", encoder=encoder, chunking=SMALL)
    col.add([f"d{i}" for i in range(len(texts))], texts)
    counts = col.store.counts()
    assert counts is not None and 0 < counts.passages - counts.documents < counts.passages / 10
    asked: list[int] = []
    retrieve = search.Searcher._retrieve

    def spied(self: search.Searcher, name: str, queries: list, k: int, *args: Any, **kwargs: Any) -> Any:
        if name == "dense":
            asked.append(k)
        return retrieve(self, name, queries, k, *args, **kwargs)

    monkeypatch.setattr(search.Searcher, "_retrieve", spied)
    got = col.search("제주도 한라산", k=20, mode="dense")
    monkeypatch.setattr(search, "FULL_FETCH_SHARE", 1e-9)  # as before: 4 passages per document
    full = col.search("제주도 한라산", k=20, mode="dense")
    assert asked[1] == 20 * search.PASSAGES_PER_DOCUMENT and 20 < asked[0] < asked[1]
    assert [(h.id, h.score) for h in got] == [(h.id, h.score) for h in full] and len(got) == 20
    assert "d" + str(len(texts) - 1) in {h.id for h in col.search("제주도 한라산", k=5, mode="hybrid")}
    col.close()
