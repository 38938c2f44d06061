"""ColBERT in a Qdrant collection (`storage/qdrant_tokens.py`): multi-vector and hybrid results equal a
folder collection's exact MaxSim over the same data (ids, order with ties by lower label, scores to
float rounding) through adds, upserts, deletes and filters, and after a push interrupted between
the points and the watermark. Qdrant's local mode, the real engine; a tiny random ColBERT."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from munjang.encoders.multi_vector import load_multi_vector_encoder
from munjang.search.backends.qdrant.tokens import NAME, QdrantTokens
from munjang.search.collection.collection import Collection
from tests.helpers.collection_backends import qdrant_url
from tests.helpers.multi_vector import pylate_colbert

WORDS = ["the", "cat", "dog", "sat", "on", "mat", "rain", "sun", "고양이", "바나나", "서울", "부산", "!"]
QUERIES = ["cat on the mat", "서울 비", "sun rain", "고양이는 어떤 동물인가요?"]
FILTERS: list[Any] = [
    {"lang": "en"},
    {"n": {"$gt": 3}},
    {"s": {"$gt": 1}},  # a range on a key holding strings: not compiled for Qdrant, the store filters
]


@pytest.fixture(scope="module")
def colbert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    folder = pylate_colbert(tmp_path_factory.mktemp("colbert") / "model")
    return folder, load_multi_vector_encoder(folder, device="cpu")


def _docs(rng: np.random.Generator, ids: list[str]) -> tuple[list[str], list[str], list[Any]]:
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 7)))) for _ in ids]
    metadata = [
        {"lang": "ko" if i % 2 else "en", "n": int(rng.integers(0, 6)), "s": "x" if i % 3 == 0 else i}
        for i in range(len(ids))
    ]
    return ids, texts, metadata


def _pair(tmp_path: Path, encoder, colbert: tuple[Path, Any]) -> tuple[Collection, Collection]:
    kwargs = {
        "encoder": encoder, "tokenizer": "word", "multi_vector_model": colbert[0],
        "multi_vector_encoder": colbert[1],
    }  # fmt: skip
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
            tokens = [[h.scores.get("multi_vector", 0.0) for h in hits] for hits in (got, want)]
            np.testing.assert_allclose(*tokens, rtol=1e-5)


def _all_same(folder: Collection, qdrant: Collection) -> None:
    _same(folder, qdrant, "multi_vector", 100)
    for flt in [None, *FILTERS]:
        _same(folder, qdrant, "multi_vector", 3, flt)
    _same(folder, qdrant, "hybrid", 5, FILTERS[0])
    assert qdrant.check() == []


def test_multi_vector_and_hybrid_equal_the_folder_backend_through_changes(
    tmp_path: Path, encoder, colbert: tuple[Path, Any]
) -> None:
    rng = np.random.default_rng(0)
    folder, qdrant = _pair(tmp_path, encoder, colbert)
    with folder, qdrant:
        assert qdrant.retrievers("hybrid") == ["dense", "lexical", "multi_vector"]
        ids, texts, metadata = _docs(rng, [f"d{i}" for i in range(30)])
        texts[7] = texts[3] = texts[20]  # equal texts: equal scores, ordered by lower label
        _add((folder, qdrant), ids[:12], texts[:12], metadata[:12])
        _add((folder, qdrant), ids[12:], texts[12:], metadata[12:])  # a second commit
        _all_same(folder, qdrant)
        assert isinstance(qdrant.multi_vector.engine, QdrantTokens)  # by Qdrant: no index in process
        assert qdrant.multi_vector.engine.native_filter(FILTERS[0]) is not None
        assert qdrant.multi_vector.engine.native_filter(FILTERS[2]) is None
        _add((folder, qdrant), *_docs(rng, ["d1", "d5", "d9"]))  # new texts
        _add((folder, qdrant), ["d2"], [texts[2]], [{"lang": "ko", "n": 5, "s": 1}])  # metadata alone
        for col in (folder, qdrant):
            assert col.delete(["d0", "d3", "d17"]) == 3
        _all_same(folder, qdrant)
        points = qdrant.dense.points
        label = qdrant.get(["d5"])[0].label  # type: ignore[union-attr]
        stored = points.client.retrieve(points.name, ids=[label], with_vectors=[NAME])[0].vector[NAME]
        folder.multi_vector.engine.sync(folder.store)  # type: ignore[attr-defined]
        want = folder.multi_vector.engine.index.matrix(  # type: ignore[attr-defined]
            folder.get(["d5"])[0].label
        )  # type: ignore[union-attr]
        np.testing.assert_array_equal(np.asarray(stored, dtype=np.float32), want)


def test_a_push_cut_before_its_watermark_is_replayed(tmp_path: Path, encoder, colbert, monkeypatch) -> None:
    rng = np.random.default_rng(1)
    folder, qdrant = _pair(tmp_path, encoder, colbert)
    ids, texts, metadata = _docs(rng, [f"d{i}" for i in range(16)])
    _add((folder, qdrant), ids[:8], texts[:8], metadata[:8])
    before = qdrant.dense.points.watermark

    def crash(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("killed between the points and the watermark")

    monkeypatch.setattr(qdrant.dense.points.client, "update_collection", crash)
    with pytest.raises(RuntimeError, match="killed between"):
        _add((qdrant,), ids[8:], texts[8:], metadata[8:])
    monkeypatch.undo()
    assert qdrant.dense.points.watermark == before
    qdrant.close()
    _add((folder,), ids[8:], texts[8:], metadata[8:])
    with folder, Collection.open("q", backend=qdrant_url(tmp_path), encoder=encoder) as again:
        assert len(again) == 16
        _all_same(folder, again)
