"""SPLADE in a Qdrant collection (`storage/qdrant_sparse.py`): sparse and hybrid results equal a folder
collection's over the same data (ids, order with ties by lower label, scores to float rounding)
through adds, upserts, deletes and filters, Qdrant-compiled or not, and after a push interrupted
between the points and the watermark. Qdrant's local mode, the real engine; a tiny random SPLADE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from munjang import load_sparse_encoder
from munjang.search.backends.qdrant.sparse import NAME, QdrantSparse
from munjang.search.collection.collection import Collection
from tests.helpers.collection_backends import qdrant_url
from tests.helpers.sparse import munjang_splade

WORDS = ["the", "cat", "dog", "sat", "on", "mat", "rain", "sun", "car", "road", "사과", "바나나", "서울"]
QUERIES = ["cat on the mat", "서울 비", "sun road car", "사과 바나나", "dog rain"]
FILTERS: list[Any] = [
    {"lang": "en"},
    {"n": {"$gt": 3}},
    {"$or": [{"lang": "ko"}, {"n": {"$lt": 2}}]},
    {"s": {"$gt": 1}},  # a range on a key holding strings: not compiled for Qdrant, the store filters
]


@pytest.fixture(scope="module")
def splade(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    folder = munjang_splade(tmp_path_factory.mktemp("splade") / "model", inference_free=True)
    return folder, load_sparse_encoder(folder, device="cpu")


def _docs(rng: np.random.Generator, ids: list[str]) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 7)))) for _ in ids]
    metadata = [
        {"lang": "ko" if i % 2 else "en", "n": int(rng.integers(0, 6)), "s": "x" if i % 3 == 0 else i}
        for i in range(len(ids))
    ]
    return ids, texts, metadata


def _pair(tmp_path: Path, encoder, splade: tuple[Path, Any]) -> tuple[Collection, Collection]:
    kwargs = {"encoder": encoder, "tokenizer": "word", "sparse_model": splade[0], "sparse_encoder": splade[1]}
    folder = Collection.create(tmp_path / "folder", **kwargs)
    qdrant = Collection.create("q", backend=qdrant_url(tmp_path), **kwargs)
    return folder, qdrant


def _add(cols: tuple[Collection, ...], ids: list[str], texts: list[str], metadata: list[Any]) -> None:
    for col in cols:
        col.upsert(ids, texts, metadata)


def _same(folder: Collection, qdrant: Collection, mode: str, k: int, filter: Any = None) -> None:
    wanted = folder.search(QUERIES, k=k, mode=mode, filter=filter, unit="passage")
    found = qdrant.search(QUERIES, k=k, mode=mode, filter=filter, unit="passage")
    for query, want, got in zip(QUERIES, wanted, found, strict=True):
        assert [h.id for h in got] == [h.id for h in want], (mode, query, filter)
        if want:  # a fused score near zero is a difference of z-scores: dense's rounding, absolute
            atol = 1e-6 if mode == "hybrid" else 0.0
            np.testing.assert_allclose([h.score for h in got], [h.score for h in want], rtol=1e-5, atol=atol)
            sparse = [[h.scores.get("sparse", 0.0) for h in hits] for hits in (got, want)]
            np.testing.assert_allclose(*sparse, rtol=1e-5)


def _all_same(folder: Collection, qdrant: Collection) -> None:
    _same(folder, qdrant, "sparse", 100)
    for flt in [None, *FILTERS]:
        _same(folder, qdrant, "sparse", 3, flt)
    _same(folder, qdrant, "hybrid", 5)
    _same(folder, qdrant, "hybrid", 5, FILTERS[0])
    assert qdrant.check() == []


def test_sparse_and_hybrid_equal_the_folder_backend_through_changes(
    tmp_path: Path, encoder, splade: tuple[Path, Any]
) -> None:
    rng = np.random.default_rng(0)
    folder, qdrant = _pair(tmp_path, encoder, splade)
    with folder, qdrant:
        assert qdrant.retrievers("hybrid") == ["dense", "lexical", "sparse"]
        ids, texts, metadata = _docs(rng, [f"d{i}" for i in range(30)])
        texts[7] = texts[3] = texts[20]  # equal texts: equal scores, ordered by lower label
        _add((folder, qdrant), ids[:12], texts[:12], metadata[:12])
        _add((folder, qdrant), ids[12:], texts[12:], metadata[12:])  # a second commit
        _all_same(folder, qdrant)
        assert isinstance(qdrant.sparse.engine, QdrantSparse)  # Qdrant answers: no index in process
        assert qdrant.sparse.engine.native_filter(FILTERS[0]) is not None
        assert qdrant.sparse.engine.native_filter(FILTERS[3]) is None
        changed = _docs(rng, ["d1", "d5", "d9"])
        _add((folder, qdrant), *changed)  # new texts
        _add((folder, qdrant), ["d2"], [texts[2]], [{"lang": "ko", "n": 5, "s": 1}])  # metadata alone
        for col in (folder, qdrant):
            assert col.delete(["d0", "d3", "d17"]) == 3
        _all_same(folder, qdrant)
        points = qdrant.dense.points
        label = qdrant.get(["d5"])[0].label  # type: ignore[union-attr]
        stored = points.client.retrieve(points.name, ids=[label], with_vectors=[NAME])[0].vector[NAME]
        folder.sparse.engine.sync(folder.store)  # type: ignore[attr-defined]
        want = folder.sparse.engine.index.vector(  # type: ignore[attr-defined]
            folder.get(["d5"])[0].label
        )  # type: ignore[union-attr]
        assert dict(zip(stored.indices, stored.values, strict=True)) == pytest.approx(want, rel=1e-7)


def test_a_push_cut_before_its_watermark_is_replayed(tmp_path: Path, encoder, splade, monkeypatch) -> None:
    """The points are upserted, then the writer dies before Qdrant records the watermark: the next
    writer's push repeats the upsert, and nothing is lost or doubled."""
    rng = np.random.default_rng(1)
    folder, qdrant = _pair(tmp_path, encoder, splade)
    ids, texts, metadata = _docs(rng, [f"d{i}" for i in range(20)])
    _add((folder, qdrant), ids[:10], texts[:10], metadata[:10])
    client = qdrant.dense.points.client
    before = qdrant.dense.points.watermark

    def crash(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("killed between the points and the watermark")

    monkeypatch.setattr(client, "update_collection", crash)
    with pytest.raises(RuntimeError, match="killed between"):
        _add((qdrant,), ids[10:], texts[10:], metadata[10:])
    monkeypatch.undo()
    assert qdrant.dense.points.watermark == before  # Qdrant holds the points, not the watermark
    qdrant.close()
    _add((folder,), ids[10:], texts[10:], metadata[10:])
    with folder, Collection.open("q", backend=qdrant_url(tmp_path), encoder=encoder) as again:
        assert len(again) == 20
        _all_same(folder, again)


def test_a_backend_that_keeps_no_token_vectors_refuses_bge_m3(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="bge-m3 collection needs a folder or Qdrant collection; postgres"):
        Collection.create("c", backend="postgresql://localhost/none", m3_model=tmp_path / "m3")
