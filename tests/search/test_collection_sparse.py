"""A collection with a sparse (SPLADE) retriever: sparse search equals brute force over the model's
own vectors, hybrid fuses three lists the same way it fuses two, and the index follows adds,
upserts, deletes, filters and re-opening."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from munjang import ModelLoadError, load_sparse_encoder
from munjang.search.collection.collection import Collection
from munjang.search.index.fusion import normalize_scores
from tests.helpers.sparse import munjang_splade

DOCS = {
    "a": ("the cat sat on the mat", {"lang": "en"}),
    "b": ("dogs and cats in the rain", {"lang": "en"}),
    "c": ("서울 과 부산 에 비 가 온다", {"lang": "ko"}),
    "d": ("사과 바나나 고양이 강아지", {"lang": "ko"}),
    "e": ("the sun is on the road", {"lang": "en"}),
}
QUERIES = ["cat on the mat", "서울 비", "sun road"]


@pytest.fixture(scope="module")
def splade(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return munjang_splade(tmp_path_factory.mktemp("splade") / "model", inference_free=True)


def filled(folder: Path, encoder, splade: Path) -> Collection:
    c = Collection.create(folder, encoder=encoder, tokenizer="word", sparse_model=splade)
    c.add(list(DOCS), [t for t, _ in DOCS.values()], [m for _, m in DOCS.values()])
    return c


@pytest.fixture(scope="module")
def col(tmp_path_factory: pytest.TempPathFactory, encoder, splade: Path) -> Collection:
    """A collection the tests only read."""
    c = filled(tmp_path_factory.mktemp("col") / "col", encoder, splade)
    yield c
    c.close()


def brute_force(splade: Path, queries: list[str], texts: dict[str, str]) -> list[list[tuple[str, float]]]:
    model = load_sparse_encoder(splade, device="cpu")
    scores = model.similarity(model.encode_query(queries), model.encode_document(list(texts.values())))
    ids = list(texts)
    out = []
    for row in scores.numpy():
        ranked = sorted(
            ((ids[j], float(s)) for j, s in enumerate(row) if s != 0), key=lambda x: (-x[1], x[0])
        )
        out.append(ranked)
    return out


def test_sparse_search_equals_brute_force_over_the_model_vectors(col: Collection, splade: Path) -> None:
    want = brute_force(splade, QUERIES, {i: t for i, (t, _) in DOCS.items()})
    got = col.search(QUERIES, k=5, mode="sparse")
    for hits, expected in zip(got, want, strict=True):
        assert expected, "each query shares tokens with some document"
        assert [h.id for h in hits] == [i for i, _ in expected[:5]]
        np.testing.assert_allclose([h.score for h in hits], [s for _, s in expected[:5]], rtol=1e-5)
        assert all(set(h.scores) == {"sparse"} for h in hits)
    assert col.info()["sparse"]["dim"] == load_sparse_encoder(splade, device="cpu").get_embedding_dimension()


def test_hybrid_fuses_dense_lexical_and_sparse_with_equal_weights(col: Collection) -> None:
    query = "cat on the mat"
    assert col.retrievers("hybrid") == ["dense", "lexical", "sparse"]
    lists = {
        m: {h.id: h.score for h in col.search(query, k=100, mode=m)} for m in ("dense", "lexical", "sparse")
    }
    z = {m: dict(zip(v, normalize_scores(list(v.values()), "zscore"), strict=True)) for m, v in lists.items()}
    hits = col.search(query, k=5, mode="hybrid")
    assert {"dense", "lexical", "sparse", "fused"} <= set(hits[0].scores)
    for hit in hits:
        want = sum(z[m].get(hit.id, min(z[m].values())) for m in z) / 3
        assert hit.scores["fused"] == pytest.approx(want, abs=1e-6)
    rrf = col.search(query, k=5, mode="hybrid", fusion="rrf", weights=[0, 0, 1])
    assert [h.id for h in rrf][: len(lists["sparse"])] == list(lists["sparse"])[:5]
    with pytest.raises(ValueError, match="2 weights for 3"):
        col.search(query, mode="hybrid", weights=[1, 1])


def test_index_follows_upserts_deletes_filters_and_reopen(tmp_path: Path, encoder, splade: Path) -> None:
    col = filled(tmp_path / "col", encoder, splade)
    col.upsert(["a"], ["서울 부산 비"])
    col.delete(["e"])
    texts = {i: t for i, (t, _) in DOCS.items() if i != "e"} | {"a": "서울 부산 비"}
    want = brute_force(splade, ["서울 비"], texts)[0]
    assert [h.id for h in col.search("서울 비", k=10, mode="sparse")] == [i for i, _ in want]
    english = col.search("서울 비", k=10, mode="sparse", filter={"lang": "en"})
    assert {h.id for h in english} <= {"a", "b"} and "e" not in {h.id for h in english}
    assert col.check() == []
    col.close()
    with Collection.open(tmp_path / "col", readonly=True) as again:  # the sparse model loads from the config
        assert [h.id for h in again.search("서울 비", k=10, mode="sparse")] == [i for i, _ in want]
        assert again.check() == []
        assert len(again.sparse.engine.index) == len(texts)


def test_a_stored_vector_is_the_document_side_of_the_model(col: Collection, splade: Path) -> None:
    model = load_sparse_encoder(splade, device="cpu")
    doc = col.get(["d"])[0]
    assert doc is not None
    col.sparse.engine.sync(col.store)
    stored = col.sparse.engine.index.vector(doc.label)
    fresh = model.encode_document(doc.text).coalesce()
    want = dict(zip(fresh.indices()[0].tolist(), fresh.values().tolist(), strict=True))
    assert stored == pytest.approx(want, abs=1e-6)  # encoded in a batch with others: float rounding


def test_sparse_needs_a_sparse_model(tmp_path: Path, encoder, splade: Path) -> None:
    with pytest.raises(ModelLoadError, match="no such model folder"):
        Collection.create(tmp_path / "x", encoder=encoder, sparse_model=tmp_path / "missing")
    assert not (tmp_path / "x").exists()
    with pytest.raises(ValueError, match="sparse_encoder needs sparse_model"):
        Collection.create(
            tmp_path / "y", encoder=encoder, sparse_encoder=load_sparse_encoder(splade, device="cpu")
        )
