"""bge-m3 in a Qdrant collection: one point holds the three heads (dense, `splade`, `colbert`), and
the m3, sparse, multi-vector and hybrid modes equal a folder collection's over the same data through
adds, upserts, deletes and a filter. Qdrant's local mode, the real engine; a tiny random bge-m3."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from munjang.search.backends.qdrant.sparse import QdrantSparse
from munjang.search.backends.qdrant.tokens import QdrantTokens
from munjang.search.collection.collection import Collection
from tests.helpers.collection_backends import qdrant_url
from tests.helpers.m3 import tiny_m3

WORDS = ["서울", "부산", "날씨", "맑음", "바다", "고양이", "the", "cat", "sat", "rain", "sun"]
QUERIES = ["서울 날씨", "the cat", "바다 sun"]
MODES = ("m3", "sparse", "multi_vector", "hybrid")


@pytest.fixture(scope="module")
def m3_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_m3(tmp_path_factory.mktemp("m3") / "model")


def _same(folder: Collection, qdrant: Collection, filter: dict | None = None) -> None:
    for mode in MODES:
        wanted = folder.search(QUERIES, k=5, mode=mode, filter=filter, unit="passage")
        found = qdrant.search(QUERIES, k=5, mode=mode, filter=filter, unit="passage")
        for want, got in zip(wanted, found, strict=True):
            assert [h.id for h in got] == [h.id for h in want], (mode, filter)
            # The tiny model's dense scores all lie within 1e-5 of 1: z-scored, float rounding (Qdrant's
            # local mode reloads vectors in float64) moves the fused score, so hybrid compares stages.
            stages = ["lexical", "sparse", "multi_vector"] if mode == "hybrid" else [mode]
            for stage in stages:
                scores = [[h.scores.get(stage, 0.0) for h in hits] for hits in (got, want)]
                np.testing.assert_allclose(*scores, rtol=1e-5, err_msg=f"{mode} {stage} {filter}")


def test_m3_modes_equal_the_folder_backend(tmp_path: Path, m3_folder: Path) -> None:
    rng = np.random.default_rng(0)
    ids = [f"d{i}" for i in range(16)]
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 6)))) for _ in ids]
    texts[5] = texts[9]  # equal texts: equal scores, ordered by lower label
    metadata = [{"lang": "ko" if i % 2 else "en"} for i in range(len(ids))]
    folder = Collection.create(tmp_path / "folder", m3_model=m3_folder, tokenizer="word")
    qdrant = Collection.create("q", backend=qdrant_url(tmp_path), m3_model=m3_folder, tokenizer="word")
    with folder, qdrant:
        for col in (folder, qdrant):
            col.add(ids[:8], texts[:8], metadata[:8])
            col.add(ids[8:], texts[8:], metadata[8:])
        _same(folder, qdrant)
        for col in (folder, qdrant):
            col.upsert(["d1"], ["부산 바다 맑음"], [{"lang": "en"}])
            col.delete(["d2", "d9"])
        _same(folder, qdrant)
        _same(folder, qdrant, {"lang": "en"})
        # Qdrant answers both: no index in process
        assert isinstance(qdrant.sparse.engine, QdrantSparse) and isinstance(
            qdrant.multi_vector.engine, QdrantTokens
        )
        assert qdrant.check() == []
