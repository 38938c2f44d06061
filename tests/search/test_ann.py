"""HNSWIndex: recall against exact numpy search, scores per metric, add/remove/replace, save/load/view,
atomic save, corrupt files and bad input."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from munjang.search.index.ann import HNSWIndex, IndexFileError
from tests.helpers.vectors import clustered, exact, recall


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    return clustered(5000, 64, seed=0), clustered(200, 64, seed=1)


@pytest.fixture(scope="module")
def built(data: tuple[np.ndarray, np.ndarray]) -> HNSWIndex:
    corpus, _ = data
    index = HNSWIndex(64)
    index.add(np.arange(len(corpus)) * 3 + 7, corpus)  # ids that are not row numbers
    return index


def test_recall_at_10_against_exact(built: HNSWIndex, data: tuple[np.ndarray, np.ndarray]) -> None:
    corpus, queries = data
    truth = exact(queries, corpus, 10) * 3 + 7
    ids, scores = built.search(queries, 10)
    assert ids.shape == scores.shape == (200, 10) and ids.dtype == np.int64 and scores.dtype == np.float32
    assert recall(ids, truth) >= 0.95
    # Scores are the cosine similarities of the returned ids, best first.
    rows = (ids - 7) // 3
    want = np.einsum("qd,qkd->qk", queries, corpus[rows])
    np.testing.assert_allclose(scores, want, atol=1e-5)
    assert np.all(np.diff(scores, axis=1) <= 1e-6)


def test_expansion_trades_latency_for_recall(data: tuple[np.ndarray, np.ndarray]) -> None:
    rng = np.random.default_rng(3)
    corpus = rng.standard_normal((3000, 64)).astype(np.float32)  # unstructured: the hard case
    queries = rng.standard_normal((100, 64)).astype(np.float32)
    index = HNSWIndex(64, metric="dot", connectivity=8, expansion_add=64)
    index.add(np.arange(len(corpus)), corpus)
    truth = exact(queries, corpus, 10)
    low = recall(index.search(queries, 10, expansion=10)[0], truth)
    high = recall(index.search(queries, 10, expansion=400)[0], truth)
    assert high > low and high >= 0.97
    assert index.expansion_search == 64  # the per-call override does not stick


@pytest.mark.parametrize("metric", ["cosine", "dot", "l2"])
def test_scores_per_metric_match_numpy(metric: str) -> None:
    rng = np.random.default_rng(1)
    corpus = rng.standard_normal((300, 16)).astype(np.float32)
    queries = rng.standard_normal((5, 16)).astype(np.float32)
    index = HNSWIndex(
        16, metric=metric, expansion_search=300, threads=1
    )  # one thread: the same graph every run
    index.add(np.arange(300), corpus)
    if metric == "cosine":
        unit = corpus / np.linalg.norm(corpus, axis=1, keepdims=True)
        want = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ unit.T
    elif metric == "dot":
        want = queries @ corpus.T
    else:
        want = -np.linalg.norm(queries[:, None, :] - corpus[None, :, :], axis=2)
    ids, scores = index.search(queries, 5)
    np.testing.assert_array_equal(ids, np.argsort(-want, axis=1, kind="stable")[:, :5])
    np.testing.assert_allclose(scores, np.take_along_axis(want, ids, 1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_precision_storage(dtype: str, data: tuple[np.ndarray, np.ndarray], tmp_path: Path) -> None:
    corpus, queries = data
    index = HNSWIndex(64, dtype=dtype)
    index.add(np.arange(2000), corpus[:2000])
    assert recall(index.search(queries, 10)[0], exact(queries, corpus[:2000], 10)) >= 0.9
    stored = index.get_vectors(np.arange(2000))
    assert 0 < np.abs(stored - corpus[:2000]).max() < 1e-2  # rounded to 2-byte floats
    f32 = HNSWIndex(64)
    f32.add(np.arange(2000), corpus[:2000])
    index.save(tmp_path / "half")
    f32.save(tmp_path / "full")
    saved = (tmp_path / "full").stat().st_size - (tmp_path / "half").stat().st_size
    assert abs(saved - 2000 * 64 * 2) < 16  # two bytes less per dimension (the footers differ slightly)


def test_add_remove_replace_and_contains() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((100, 8)).astype(np.float32)
    index = HNSWIndex(8, metric="dot", expansion_search=200)
    index.add(np.arange(50), x[:50])
    index.add(np.arange(50, 100), x[50:])  # incremental
    assert len(index) == 100 and 99 in index and 100 not in index and -1 not in index and "a" not in index
    np.testing.assert_array_equal(index.ids(), np.arange(100))
    assert index.remove([3, 4, 1000]) == 2  # an unknown id is ignored
    assert index.remove([3]) == 0
    assert len(index) == 98 and 3 not in index
    ids, _ = index.search(x, 100)
    assert not np.isin(ids, [3, 4]).any()
    assert (ids[:, 98:] == -1).all()  # only 98 vectors left: padded
    # Re-adding an existing id replaces its vector; re-adding a removed id brings it back.
    index.add([10, 3], np.stack([x[20] * 2, x[3]]))
    assert len(index) == 99 and 3 in index
    np.testing.assert_allclose(index.get_vectors([10, 3]), np.stack([x[20] * 2, x[3]]))
    top, scores = index.search(x[20] * 2, 1)
    assert top[0, 0] == 10 and scores[0, 0] == pytest.approx(float(4 * x[20] @ x[20]), rel=1e-5)
    with pytest.raises(ValueError, match="not in the index"):
        index.get_vectors([4])


def test_padding_and_empty_index() -> None:
    index = HNSWIndex(4)
    ids, scores = index.search(np.ones(4), 3)
    assert ids.tolist() == [[-1, -1, -1]] and np.isneginf(scores).all()
    index.add([5, 9], np.eye(4, dtype=np.float32)[:2])
    ids, scores = index.search(np.eye(4, dtype=np.float32)[:1], 3)
    assert ids.tolist() == [[5, 9, -1]] and scores[0, 0] == pytest.approx(1.0) and np.isneginf(scores[0, 2])
    assert index.search(np.zeros((0, 4)), 2)[0].shape == (0, 2)
    index.add([], np.zeros((0, 4)))
    assert len(index) == 2


def test_save_load_and_view_round_trip(tmp_path: Path, built: HNSWIndex, data: tuple) -> None:
    _, queries = data
    path = tmp_path / "index.hnsw"
    built.save(path)
    assert os.listdir(tmp_path) == ["index.hnsw"]  # no temporary file left behind
    want_ids, want_scores = built.search(queries, 10)
    for view in (False, True):
        loaded = HNSWIndex.load(path, view=view)
        assert loaded.get_config_dict() == built.get_config_dict() and loaded.is_view is view
        assert len(loaded) == len(built)
        np.testing.assert_array_equal(loaded.ids(), built.ids())
        ids, scores = loaded.search(queries, 10)
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_array_equal(scores, want_scores)
    view_index = HNSWIndex.load(path, view=True)
    with pytest.raises(ValueError, match="read-only"):
        view_index.add([1], queries[:1])
    with pytest.raises(ValueError, match="read-only"):
        view_index.remove([7])
    # A loaded (not viewed) index can be changed and saved over the same file.
    loaded = HNSWIndex.load(path)
    loaded.remove([7])
    loaded.expansion_search = 100
    loaded.save(path)
    again = HNSWIndex.load(path)
    assert 7 not in again and len(again) == len(built) - 1 and again.expansion_search == 100


def test_failed_save_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.hnsw"
    index = HNSWIndex(4)
    index.add([1], np.ones((1, 4)))
    index.save(path)
    before = path.read_bytes()
    index.add([2], -np.ones((1, 4)))
    real_save = index._index.save

    def crash(target: str) -> None:
        real_save(target)
        with open(target, "r+b") as f:  # half-written, then the process "dies"
            f.truncate(os.path.getsize(target) // 2)
        raise OSError("disk full")

    monkeypatch.setattr(index._index, "save", crash)
    with pytest.raises(OSError, match="disk full"):
        index.save(path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["a.hnsw"]
    assert len(HNSWIndex.load(path)) == 1


def test_missing_and_corrupt_files(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        HNSWIndex.load(tmp_path / "missing.hnsw")
    with pytest.raises(FileNotFoundError, match="folder"):
        HNSWIndex(4).save(tmp_path / "no" / "such" / "dir.hnsw")
    junk = tmp_path / "junk.hnsw"
    junk.write_bytes(os.urandom(1000))
    with pytest.raises(IndexFileError, match="not a munjang index"):
        HNSWIndex.load(junk)
    index = HNSWIndex(4)
    index.add(np.arange(20), np.random.default_rng(0).standard_normal((20, 4)))
    good = tmp_path / "good.hnsw"
    index.save(good)
    data = good.read_bytes()
    truncated = tmp_path / "truncated.hnsw"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(IndexFileError):
        HNSWIndex.load(truncated)
    missing_middle = tmp_path / "cut.hnsw"  # footer intact, payload shortened
    missing_middle.write_bytes(data[:100] + data[200:])
    with pytest.raises(IndexFileError, match="truncated or corrupt"):
        HNSWIndex.load(missing_middle)
    assert issubclass(IndexFileError, ValueError)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="metric"):
        HNSWIndex(4, metric="hamming")
    with pytest.raises(ValueError, match="dtype"):
        HNSWIndex(4, dtype="i8")
    with pytest.raises(ValueError, match="dim"):
        HNSWIndex(0)
    with pytest.raises(ValueError, match="connectivity"):
        HNSWIndex(4, connectivity=1)
    with pytest.raises(ValueError, match="threads"):
        HNSWIndex(4, threads=-1)
    index = HNSWIndex(4)
    with pytest.raises(ValueError, match="3 dimensions, the index has 4"):
        index.add([1], np.ones((1, 3)))
    with pytest.raises(ValueError, match="2 ids but 3 vectors"):
        index.add([1, 2], np.ones((3, 4)))
    with pytest.raises(ValueError, match="duplicate id 1"):
        index.add([1, 1], np.ones((2, 4)))
    with pytest.raises(ValueError, match="non-negative"):
        index.add([-5], np.ones((1, 4)))
    with pytest.raises(ValueError, match="integers"):
        index.add([1.5], np.ones((1, 4)))
    with pytest.raises(ValueError, match="NaN"):
        index.add([1], np.full((1, 4), np.nan))
    with pytest.raises(ValueError, match="all zeros"):
        index.add([1], np.zeros((1, 4)))
    with pytest.raises(ValueError, match="2-D"):
        index.add([1], np.ones((1, 1, 4)))
    assert len(index) == 0  # nothing was added by the failed calls
    index.add([1], np.ones((1, 4)))
    with pytest.raises(ValueError, match="k must be"):
        index.search(np.ones(4), 0)
    with pytest.raises(ValueError, match="expansion"):
        index.search(np.ones(4), 1, expansion=0)
    with pytest.raises(ValueError, match="queries have 5"):
        index.search(np.ones(5), 1)
