"""The sparse inverted index against brute force (dense dot products over every document): the same
top-k labels and scores after adds in many segments, deletions, merges and label filters."""

from __future__ import annotations

import numpy as np
import pytest

from munjang.search.index import sparse_index
from munjang.search.index.sparse_index import SparseIndex, rows_to_csr

DIM = 300


def random_rows(rng: np.random.Generator, n: int, active: int = 12) -> list[tuple[np.ndarray, np.ndarray]]:
    rows = []
    for _ in range(n):
        ids = np.unique(rng.zipf(1.3, active) % DIM)  # a few tokens are in most documents, as in text
        rows.append((ids.astype(np.int64), rng.random(len(ids)).astype(np.float32) + 0.05))
    return rows


def brute_force(dense_docs: dict[int, np.ndarray], query: np.ndarray, k: int, allowed=None):
    scored = [
        (label, float(vec @ query))
        for label, vec in dense_docs.items()
        if allowed is None or label in allowed
    ]
    scored = [(label, s) for label, s in scored if s != 0]
    return sorted(scored, key=lambda x: (-x[1], x[0]))[:k]


def dense_of(row: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    out = np.zeros(DIM, dtype=np.float32)
    out[row[0]] = row[1]
    return out


def check(index: SparseIndex, docs: dict[int, np.ndarray], queries, k: int, allowed=None) -> None:
    got = index.search(rows_to_csr(queries, DIM), k, None if allowed is None else np.array(sorted(allowed)))
    for q, row in zip(queries, got, strict=True):
        want = brute_force(docs, dense_of(q), k, allowed)
        assert [label for label, _ in row] == [label for label, _ in want]
        np.testing.assert_allclose([s for _, s in row], [s for _, s in want], rtol=1e-5)


def test_search_matches_brute_force_through_adds_deletes_and_merges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sparse_index, "MAX_SEGMENTS", 3)
    rng = np.random.default_rng(0)
    index = SparseIndex(DIM)
    docs: dict[int, np.ndarray] = {}
    queries = random_rows(rng, 6, active=5)
    label = 0
    for step in range(7):  # more segments than MAX_SEGMENTS: merged on the way
        rows = random_rows(rng, 40)
        labels = np.arange(label + 1, label + 1 + len(rows))
        label += len(rows)
        index.add(labels, rows)
        docs.update({int(x): dense_of(r) for x, r in zip(labels, rows, strict=True)})
        gone = rng.choice(sorted(docs), 15, replace=False)
        assert index.remove(np.append(gone, 10_000)) == 15  # an unknown label is ignored
        for x in gone:
            del docs[int(x)]
        assert len(index) == len(docs) and sorted(index.ids().tolist()) == sorted(docs)
        check(index, docs, queries, k=10)
        assert len(index.segments) <= 3, f"step {step}"
    allowed = set(rng.choice(sorted(docs), 30, replace=False).tolist())
    check(index, docs, queries, k=5, allowed=allowed)
    some = next(iter(docs))
    stored = index.vector(some)
    assert stored == pytest.approx({int(i): float(docs[some][i]) for i in np.flatnonzero(docs[some])})


def test_only_documents_sharing_a_token_are_returned() -> None:
    index = SparseIndex(10)
    index.add(np.array([1, 2]), [(np.array([1, 2]), np.array([1.0, 1.0])), (np.array([5]), np.array([2.0]))])
    hits = index.search(rows_to_csr([(np.array([2]), np.array([3.0]))], 10), k=10)
    assert hits == [[(1, 3.0)]]
    with pytest.raises(ValueError, match="outside the vocabulary"):
        index.add(np.array([3]), [(np.array([10]), np.array([1.0]))])
