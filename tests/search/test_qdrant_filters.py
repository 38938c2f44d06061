"""Metadata filters compiled to Qdrant's own filters select exactly what the folder backend's SQL
selects: for a table of filter specs covering every operator (missing keys, JSON null, booleans as
1 / 0, nested keys, $not over unknowns), Qdrant's filtered dense, BM25 and hybrid results equal the
folder collection's. The table also says which specs Qdrant runs natively and which fall back to
allowed labels (arrays, objects, ranges over strings, big integers). Qdrant's local mode, for real."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from munjang.search.collection.collection import Collection
from tests.helpers.collection_backends import qdrant_url

WORDS = ["서울", "부산", "날씨", "맑음", "바람", "구름", "비", "눈", "바다", "산", "강", "하늘"]
METADATA: list[dict[str, Any]] = [
    {"lang": "ko", "year": 2015, "score": 1.5, "flag": True, "meta": {"author": "kim", "n": 1}, "opt": None},
    {"lang": "en", "year": 2020, "flag": False, "meta": {"author": "lee"}, "opt": 3, "mixed": "x"},
    {"lang": "ko", "year": 2018, "score": 0, "flag": 1, "tags": ["a", "b"], "mixed": 2},
    {"year": 2016.5, "opt": 0, "n-key": 5, "big": 2**60},
    {},
    {"lang": "ja", "flag": 0, "meta": {"n": 3}, "opt": "three"},
]

# (filter, whether Qdrant runs it natively)
SPECS: list[tuple[dict[str, Any], bool]] = [
    ({"lang": "ko"}, True),
    ({"lang": {"$ne": "ko"}}, True),
    ({"opt": None}, True),
    ({"opt": {"$ne": None}}, True),
    ({"opt": {"$ne": 3}}, True),
    ({"opt": {"$eq": 3}}, True),
    ({"year": {"$gte": 2015, "$lt": 2020}}, True),
    ({"year": 2015.0}, True),
    ({"score": {"$gt": 0}}, True),
    ({"score": {"$lte": 1.5}}, True),
    ({"flag": True}, True),
    ({"flag": 1}, True),
    ({"flag": {"$ne": False}}, True),
    ({"lang": {"$in": ["ko", "ja"]}}, True),
    ({"year": {"$in": [2015, 2020, None]}}, True),
    ({"lang": {"$in": [None]}}, True),
    ({"lang": {"$nin": ["ko"]}}, True),
    ({"lang": {"$nin": ["ko", None]}}, True),
    ({"opt": {"$exists": True}}, True),
    ({"opt": {"$exists": False}}, True),
    ({"meta.author": "kim"}, True),
    ({"meta.n": {"$lte": 1}}, True),
    ({"meta.n": {"$ne": 1}}, True),
    ({"n-key": 5}, True),
    ({"$or": [{"lang": "en"}, {"year": {"$lt": 2016}}]}, True),
    ({"$and": [{"lang": "ko"}, {"flag": True}]}, True),
    ({"$not": {"score": {"$gt": 1}}}, True),
    ({"$not": {"opt": {"$gt": 1}}}, False),  # "opt" has held a string: SQLite sorts it above numbers
    ({"$not": {"lang": "ko"}}, True),
    ({"$not": {"$or": [{"opt": {"$ne": 3}}, {"lang": {"$nin": ["en", None]}}]}}, True),
    ({"lang": "ko", "year": {"$gt": 2016}}, True),
    ({}, True),
    ({"tags": "a"}, False),
    ({"meta": {"$exists": True}}, False),
    ({"mixed": {"$gt": 1}}, False),
    ({"mixed": "x"}, True),
    ({"lang": {"$gt": "a"}}, False),
    ({"big": 2**60}, False),
    ({"year": {"$lt": 2**60}}, False),
]


def _documents(n: int) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 6)))) for _ in range(n)]
    return [f"d{i:02d}" for i in range(n)], texts, [METADATA[i % len(METADATA)] for i in range(n)]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, encoder) -> Any:
    """The same documents in a folder collection and a Qdrant one."""
    tmp = tmp_path_factory.mktemp("filters")
    folder = Collection.create(tmp / "folder", encoder=encoder, tokenizer="word")
    qdrant = Collection.create("q", backend=qdrant_url(tmp), encoder=encoder, tokenizer="word")
    ids, texts, metas = _documents(36)
    for col in (folder, qdrant):
        col.add(ids, texts, metas)
    yield folder, qdrant
    folder.close()
    qdrant.close()


def _results(col: Collection, spec: dict[str, Any], mode: str) -> list[list[tuple[str, float]]]:
    hits = col.search(["서울 날씨", "바다 산 하늘"], k=36, mode=mode, filter=spec)
    return [[(h.id, h.score) for h in row] for row in hits]


def _assert_same(folder: Collection, qdrant: Collection, spec: dict[str, Any]) -> None:
    for mode in ("dense", "lexical", "hybrid"):
        want, got = _results(folder, spec, mode), _results(qdrant, spec, mode)
        for w, g in zip(want, got, strict=True):
            assert [i for i, _ in g] == [i for i, _ in w], (spec, mode)
            # float32 sums in another order (Qdrant's local mode, munjang's SIMD): 1e-6 apart near 0
            assert [s for _, s in g] == pytest.approx([s for _, s in w], rel=1e-5, abs=1e-5), (spec, mode)


# One spec per operator family runs by default (each costs a few searches in Qdrant's local mode);
# the whole table runs with -m slow.
DEFAULT = [0, 3, 6, 10, 14, 17, 19, 20, 24, 27, 32, 37]


@pytest.mark.parametrize(
    ("spec", "native"),
    [pytest.param(*row, marks=() if i in DEFAULT else pytest.mark.slow) for i, row in enumerate(SPECS)],
    ids=[str(s) for s, _ in SPECS],
)
def test_filtered_searches_equal_the_folder_backend(pair: Any, spec: dict[str, Any], native: bool) -> None:
    folder, qdrant = pair
    assert (qdrant.dense.native_filter(spec) is not None) == native
    assert (qdrant.lexical.native_filter(spec) is not None) == native
    _assert_same(folder, qdrant, spec)


def test_metadata_changed_in_place_reaches_qdrants_filters(tmp_path: Path, encoder) -> None:
    """An upsert of the same text with new metadata changes no label: Qdrant's payload follows."""
    folder = Collection.create(tmp_path / "folder", encoder=encoder, tokenizer="word")
    qdrant = Collection.create("q", backend=qdrant_url(tmp_path), encoder=encoder, tokenizer="word")
    ids, texts, metas = _documents(12)
    changed = [{"lang": "fr", "year": 1999, "meta": {"author": "park"}} for _ in ids[:6]]
    for col in (folder, qdrant):
        col.add(ids, texts, metas)
        col.add(ids[:6], texts[:6], changed, on_conflict="upsert")
    for spec in ({"lang": "fr"}, {"lang": "ko"}, {"meta.author": "park"}, {"year": {"$lt": 2000}}):
        assert qdrant.dense.native_filter(spec) is not None
        _assert_same(folder, qdrant, spec)
    log = "SELECT count(*), max(seq) FROM qdrant_metadata_log"
    assert qdrant.store.conn.execute(log).fetchone() == (1, 6)  # pushed: only the mark is kept
    for col in (folder, qdrant):
        col.add(ids[6:8], texts[6:8], [{"lang": "de"}] * 2, on_conflict="upsert")
    _assert_same(folder, qdrant, {"lang": "de"})
    assert qdrant.store.conn.execute(log).fetchone() == (1, 8)
    with Collection.open("q", backend=qdrant_url(tmp_path), encoder=encoder, readonly=True) as reader:
        hits = reader.search("서울 날씨", k=12, mode="lexical", filter={"lang": "fr"})
        assert {h.id for h in hits} <= set(ids[:6]) and hits
    folder.close()
    qdrant.close()
