"""A collection with a multi-vector (ColBERT) retriever: multi_vector search equals brute-force MaxSim
over the model's own token vectors (as stored, float16) and sentence-transformers' scores, hybrid fuses
it like any retriever, and the index follows adds, upserts, deletes, filters, re-opening and an older
folder's schema."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from munjang.encoders.multi_vector import load_multi_vector_encoder, maxsim
from munjang.search.collection.collection import Collection
from munjang.search.index.fusion import normalize_scores
from tests.helpers.multi_vector import st_multi_vector

DOCS = {
    "a": ("the cat sat on the mat", {"lang": "en"}),
    "b": ("dogs and cats in the rain", {"lang": "en"}),
    "c": ("서울과 부산에 비가 온다", {"lang": "ko"}),
    "d": ("사과 바나나 고양이 강아지", {"lang": "ko"}),
    "e": ("the sun is on the road", {"lang": "en"}),
    "f": ("고양이는 포유류이다.", {"lang": "ko"}),
}
QUERIES = ["cat on the mat", "서울 비", "고양이는 어떤 동물인가요?"]


@pytest.fixture(scope="module")
def colbert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return st_multi_vector(tmp_path_factory.mktemp("colbert") / "model")


def filled(folder: Path, encoder, colbert: Path) -> Collection:
    c = Collection.create(folder, encoder=encoder, tokenizer="word", multi_vector_model=colbert)
    c.add(list(DOCS), [t for t, _ in DOCS.values()], [m for _, m in DOCS.values()])
    return c


@pytest.fixture(scope="module")
def col(tmp_path_factory: pytest.TempPathFactory, encoder, colbert: Path) -> Collection:
    """A collection the tests only read."""
    c = filled(tmp_path_factory.mktemp("col") / "col", encoder, colbert)
    yield c
    c.close()


def brute_force(colbert: Path, queries: list[str], texts: dict[str, str]) -> list[list[tuple[str, float]]]:
    """MaxSim of the model's query vectors with its document vectors rounded to float16 (as stored)."""
    model = load_multi_vector_encoder(colbert, device="cpu")
    docs = [m.astype(np.float16).astype(np.float32) for m in model.encode_document(list(texts.values()))]
    scores = maxsim(model.encode_query(queries), docs)
    ids = list(texts)
    return [
        sorted(((ids[j], float(s)) for j, s in enumerate(row)), key=lambda x: (-x[1], x[0])) for row in scores
    ]


def test_multi_vector_search_equals_brute_force_maxsim(col: Collection, colbert: Path) -> None:
    want = brute_force(colbert, QUERIES, {i: t for i, (t, _) in DOCS.items()})
    got = col.search(QUERIES, k=4, mode="multi_vector")
    for hits, expected in zip(got, want, strict=True):
        assert [h.id for h in hits] == [i for i, _ in expected[:4]]
        np.testing.assert_allclose([h.score for h in hits], [s for _, s in expected[:4]], rtol=1e-5)
        assert all(set(h.scores) == {"multi_vector"} for h in hits)
    info = col.info()["multi_vector"]
    assert info == {"model": str(colbert.resolve()), "dim": 16, "similarity": "maxsim"}


def test_scores_match_sentence_transformers_within_float16(col: Collection, colbert: Path) -> None:
    from sentence_transformers import MultiVectorEncoder

    ref = MultiVectorEncoder(str(colbert), device="cpu")
    texts = [t for t, _ in DOCS.values()]
    scores = ref.similarity(ref.encode_query(QUERIES), ref.encode_document(texts)).numpy()
    for row, hits in zip(scores, col.search(QUERIES, k=len(DOCS), mode="multi_vector"), strict=True):
        want = {doc_id: float(s) for doc_id, s in zip(DOCS, row, strict=True)}
        for hit in hits:
            assert hit.score == pytest.approx(want[hit.id], abs=2e-2)  # float16 tokens, ~12 query tokens


def test_hybrid_fuses_dense_lexical_and_multi_vector(col: Collection) -> None:
    query = "cat on the mat"
    names = ["dense", "lexical", "multi_vector"]
    assert col.retrievers("hybrid") == names
    lists = {m: {h.id: h.score for h in col.search(query, k=100, mode=m)} for m in names}
    z = {m: dict(zip(v, normalize_scores(list(v.values()), "zscore"), strict=True)) for m, v in lists.items()}
    hits = col.search(query, k=5, mode="hybrid")
    assert {"dense", "lexical", "multi_vector", "fused"} <= set(hits[0].scores)
    for hit in hits:
        want = sum(z[m].get(hit.id, min(z[m].values())) for m in z) / 3
        assert hit.scores["fused"] == pytest.approx(want, abs=1e-6)


def test_index_follows_upserts_deletes_filters_and_reopen(tmp_path: Path, encoder, colbert: Path) -> None:
    col = filled(tmp_path / "col", encoder, colbert)
    col.upsert(["a"], ["서울 부산 비"], [{"lang": "en"}])
    col.delete(["e"])
    texts = {i: t for i, (t, _) in DOCS.items() if i != "e"} | {"a": "서울 부산 비"}
    want = [i for i, _ in brute_force(colbert, ["서울 비"], texts)[0]]
    assert [h.id for h in col.search("서울 비", k=10, mode="multi_vector")] == want
    english = col.search("서울 비", k=10, mode="multi_vector", filter={"lang": "en"})
    assert [h.id for h in english] == [i for i in want if i in {"a", "b"}]
    assert col.check() == []
    labels = {d.id: d.label for d in col.get(list(texts)) if d is not None}
    stored = col.multi_vector.engine.index.matrix(labels["a"])
    fresh = load_multi_vector_encoder(colbert, device="cpu").encode_document("서울 부산 비")
    np.testing.assert_allclose(stored, fresh, atol=1e-3)  # float16 in the store
    col.close()
    with Collection.open(tmp_path / "col", readonly=True) as again:  # the model loads from the config
        assert [h.id for h in again.search("서울 비", k=10, mode="multi_vector")] == want
        assert again.check() == []
        assert len(again.multi_vector.engine.index) == len(texts)


def test_an_index_that_disagrees_with_the_store_is_a_problem(tmp_path: Path, encoder, colbert: Path) -> None:
    col = filled(tmp_path / "col", encoder, colbert)
    col.multi_vector.engine.sync(col.store)
    col.multi_vector.engine.index.remove(np.array([col.get(["b"])[0].label]))
    assert col.check() == ["multi-vector index: 1 documents missing, 0 deleted ones left"]
    col.close()


def test_an_older_folder_gets_the_token_table_on_a_writable_open(tmp_path: Path, encoder) -> None:
    Collection.create(tmp_path / "old", encoder=encoder, tokenizer="word").close()
    with sqlite3.connect(tmp_path / "old" / "collection.db") as db:
        db.execute("DROP TABLE token_vectors")
    Collection.open(tmp_path / "old", encoder=encoder).close()
    with sqlite3.connect(tmp_path / "old" / "collection.db") as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"token_vectors", "sparse_vectors"} <= tables


def test_mode_and_setup_errors_name_the_problem(tmp_path: Path, encoder, colbert: Path) -> None:
    with Collection.create(tmp_path / "plain", encoder=encoder, tokenizer="word") as plain:
        plain.add(["x"], ["a text"])
        with pytest.raises(ValueError, match="no multi_vector retriever .*multi_vector_model"):
            plain.search("text", mode="multi_vector")
    with pytest.raises(ValueError, match="needs a backend that keeps token vectors .*; postgres has none"):
        Collection.create(
            "c", backend="postgresql://localhost/none", encoder=encoder, multi_vector_model=colbert
        )
    with pytest.raises(ValueError, match="multi_vector_encoder needs multi_vector_model"):
        Collection.create(
            tmp_path / "y",
            encoder=encoder,
            multi_vector_encoder=load_multi_vector_encoder(colbert, device="cpu"),
        )
    assert not (tmp_path / "y").exists()
