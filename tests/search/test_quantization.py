"""Quantization: parity of quantize_embeddings with sentence-transformers, Hamming distances against a
numpy reference, BinaryIndex / Int8Index recall with and without rescoring, rescoring sources, storage
operations, save/load/view and bad input."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers.util.quantization import quantize_embeddings as st_quantize_embeddings

from munjang.search.index.ann import IndexFileError
from munjang.search.index.quantization import _popcount_lut, hamming_distances, quantize_embeddings
from munjang.search.index.quantized_index import BinaryIndex, Int8Index
from tests.helpers.vectors import clustered, exact, recall


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    corpus, queries = clustered(5000, 384, seed=0), clustered(100, 384, seed=1)
    return corpus, queries, exact(queries, corpus, 10)


# ---------------------------------------------------------------- quantize_embeddings


@pytest.mark.parametrize("precision", ["float32", "int8", "uint8", "binary", "ubinary"])
def test_quantize_matches_sentence_transformers(precision: str) -> None:
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((300, 70)).astype(np.float32)  # 70 bits: packbits pads the last byte
    calibration = rng.standard_normal((1000, 70)).astype(np.float32)
    ranges = np.vstack([emb.min(0) - 0.5, emb.max(0) + 0.5])
    ranges[:, 3] = 0.25  # a zero-width range: step 1, as in sentence-transformers
    for kwargs in ({}, {"calibration_embeddings": calibration}, {"ranges": ranges}):
        ours = quantize_embeddings(emb, precision, **kwargs)
        want = st_quantize_embeddings(emb, precision, **kwargs)
        assert isinstance(ours, np.ndarray) and ours.dtype == want.dtype
        np.testing.assert_array_equal(ours, want)
    tensor = torch.from_numpy(emb).to(torch.bfloat16)
    np.testing.assert_array_equal(
        quantize_embeddings(tensor, precision), st_quantize_embeddings(tensor, precision)
    )
    rows = list(emb[:50])
    np.testing.assert_array_equal(
        quantize_embeddings(rows, precision), st_quantize_embeddings(rows, precision)
    )
    empty = np.zeros((0, 70), dtype=np.float32)
    ours_empty = quantize_embeddings(empty, precision)
    assert isinstance(ours_empty, np.ndarray)
    want_empty = st_quantize_embeddings(empty, precision)
    assert ours_empty.shape == want_empty.shape and ours_empty.dtype == want_empty.dtype


def test_quantize_multi_vector_lists_share_buckets() -> None:
    rng = np.random.default_rng(1)
    docs = [rng.standard_normal((n, 16)).astype(np.float32) for n in (5, 1, 9)]
    for precision in ("int8", "ubinary"):
        ours = quantize_embeddings(docs, precision)
        want = st_quantize_embeddings(docs, precision)
        assert isinstance(ours, list) and len(ours) == 3
        for a, b in zip(ours, want, strict=True):
            np.testing.assert_array_equal(a, b)
    assert quantize_embeddings([], "int8") == []


def test_quantize_errors(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ValueError, match="precision"):
        quantize_embeddings(np.ones((3, 4)), "int4")
    with pytest.raises(ValueError, match="single embedding"):
        quantize_embeddings(np.ones((1, 4)), "int8")
    with pytest.raises(ValueError, match="must be float"):
        quantize_embeddings(np.ones((3, 4), dtype=np.int8), "binary")
    with caplog.at_level(logging.WARNING, logger="munjang.search.index.quantization"):
        quantize_embeddings(np.random.default_rng(0).standard_normal((10, 4)), "int8")
    assert "only 10 embeddings" in caplog.text


# ---------------------------------------------------------------- Hamming


def test_hamming_distances_match_numpy_reference() -> None:
    rng = np.random.default_rng(2)
    for dim in (384, 70, 8):
        corpus = quantize_embeddings(rng.standard_normal((40_000, dim)), "ubinary")  # several blocks
        queries = quantize_embeddings(rng.standard_normal((3, dim)), "ubinary")
        assert isinstance(corpus, np.ndarray) and isinstance(queries, np.ndarray)
        got = hamming_distances(queries, corpus)
        want = np.unpackbits(queries[:, None, :] ^ corpus[None, :, :], axis=2).sum(axis=2)
        assert got.dtype == np.uint16
        np.testing.assert_array_equal(got, want)
        signed = hamming_distances((queries - 128).astype(np.int8), (corpus[:100] - 128).astype(np.int8))
        np.testing.assert_array_equal(signed, want[:, :100])  # "binary" int8 codes give the same distances
    with pytest.raises(ValueError, match="bytes per row"):
        hamming_distances(np.zeros((1, 4), np.uint8), np.zeros((2, 5), np.uint8))
    with pytest.raises(ValueError, match="packed bits"):
        hamming_distances(np.zeros((1, 4), np.float32), np.zeros((2, 4), np.uint8))


def test_popcount_fallback_matches_numpy() -> None:
    words = np.random.default_rng(3).integers(0, 2**63, 1000, dtype=np.uint64)
    words[:3] = [0, np.iinfo(np.uint64).max, 1]
    out = np.empty(1000, dtype=np.uint8)
    want = [bin(int(w)).count("1") for w in words]
    np.testing.assert_array_equal(_popcount_lut(words, out), want)


def test_binary_search_without_rescoring_is_exact_hamming(data: tuple) -> None:
    corpus, queries, _ = data
    index = BinaryIndex(384)
    index.add(np.arange(len(corpus)) + 100, corpus)
    ids, scores = index.search(queries, 10, rescore=False)
    distances = hamming_distances(
        quantize_embeddings(queries, "ubinary"), quantize_embeddings(corpus, "ubinary")
    )
    # Scores are -Hamming of the returned ids, and they are the 10 smallest distances (ties: lower id).
    np.testing.assert_array_equal(-scores, np.take_along_axis(distances, ids - 100, 1))
    want = np.argsort(distances, axis=1, kind="stable")[:, :10] + 100
    np.testing.assert_array_equal(ids, want)


def test_threaded_hamming_scan_matches_single_thread() -> None:
    rng = np.random.default_rng(8)
    corpus = rng.standard_normal((40_000, 64)).astype(np.float32)  # 3 blocks: the scan is split
    queries = rng.standard_normal((5, 64)).astype(np.float32)
    serial, threaded = BinaryIndex(64, threads=1), BinaryIndex(64, threads=2)
    for index in (serial, threaded):
        index.add(np.arange(len(corpus)), corpus)
    distances = hamming_distances(
        quantize_embeddings(queries, "ubinary"), quantize_embeddings(corpus, "ubinary")
    )
    want = np.argsort(distances, axis=1, kind="stable")[:, :20]
    for q in (queries[:1], queries):  # one query: blocks in parallel; several: queries in parallel
        for index in (serial, threaded):
            ids, scores = index.search(q, 20, rescore=False)
            np.testing.assert_array_equal(ids, want[: len(q)])
            np.testing.assert_array_equal(-scores, np.take_along_axis(distances[: len(q)], ids, 1))


# ---------------------------------------------------------------- recall and rescoring


def test_binary_rescoring_improves_recall(data: tuple, tmp_path: Path) -> None:
    corpus, queries, truth = data
    np.save(tmp_path / "vectors.npy", corpus)
    on_disk = np.load(tmp_path / "vectors.npy", mmap_mode="r")  # RAM holds only the bits
    index = BinaryIndex(384, rescore_vectors=on_disk, rescore_multiplier=10)
    index.add(np.arange(len(corpus)), corpus)
    hamming_only = recall(index.search(queries, 10, rescore=False)[0], truth)
    ids, scores = index.search(queries, 10)
    rescored = recall(ids, truth)
    assert rescored >= 0.9 and rescored > hamming_only + 0.05
    np.testing.assert_allclose(scores, np.einsum("qd,qkd->qk", queries, corpus[ids]), rtol=1e-5, atol=1e-6)
    assert np.all(np.diff(scores, axis=1) <= 0)
    # Without float vectors: re-ranking against the ±1 bits (as sentence-transformers) helps a little.
    signs = BinaryIndex(384, rescore_multiplier=10)
    signs.add(np.arange(len(corpus)), corpus)
    sign_ids, sign_scores = signs.search(queries, 10)
    assert hamming_only <= recall(sign_ids, truth) < rescored
    bits = np.unpackbits(quantize_embeddings(corpus, "ubinary"), axis=1).astype(np.float32) * 2 - 1
    np.testing.assert_allclose(sign_scores, np.einsum("qd,qkd->qk", queries, bits[sign_ids]), rtol=1e-5)


def test_rescore_sources_array_and_callable_agree(data: tuple) -> None:
    corpus, queries, _ = data
    calls: list[np.ndarray] = []

    def fetch(ids: np.ndarray) -> np.ndarray:
        calls.append(ids)
        return corpus[ids - 1000]

    a = BinaryIndex(384, rescore_vectors=fetch)
    a.add(np.arange(len(corpus)) + 1000, corpus)
    padded = np.zeros((len(corpus) + 1000, 384), dtype=np.float32)
    padded[1000:] = corpus
    b = BinaryIndex(384, rescore_vectors=padded)
    b.add(np.arange(len(corpus)) + 1000, corpus)
    ids_a, scores_a = a.search(queries, 10, rescore_multiplier=3)
    ids_b, scores_b = b.search(queries, 10, rescore_multiplier=3)
    np.testing.assert_array_equal(ids_a, ids_b)
    np.testing.assert_array_equal(scores_a, scores_b)
    assert len(calls) == 1 and np.all(np.diff(calls[0]) > 0)  # one fetch of sorted, distinct ids
    bad = BinaryIndex(384, rescore_vectors=lambda ids: np.zeros((len(ids), 3)))
    bad.add([1], corpus[:1])
    with pytest.raises(ValueError, match="rescore_vectors returned shape"):
        bad.search(queries[:1], 1)
    short = BinaryIndex(384, rescore_vectors=corpus[:10])
    short.add([50], corpus[:1])
    with pytest.raises(ValueError, match="no row"):
        short.search(queries[:1], 1)


def test_int8_candidates_and_rescoring(data: tuple) -> None:
    corpus, queries, truth = data
    index = Int8Index(384, calibration_embeddings=corpus[:1000])
    index.add(np.arange(len(corpus)), corpus)
    ids, scores = index.search(queries, 10)
    # Candidate scores: the float query against the bucket centres of the int8 codes.
    ranges = index.ranges
    assert ranges is not None
    steps = (ranges[1] - ranges[0]) / 255
    codes = quantize_embeddings(corpus, "int8", ranges=ranges)
    assert isinstance(codes, np.ndarray)
    centres = ranges[0] + steps * (codes.astype(np.float64) + 128.5)
    want = queries.astype(np.float64) @ centres.T
    np.testing.assert_allclose(scores, np.take_along_axis(want, ids, 1), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(ids, np.argsort(-want, axis=1, kind="stable")[:, :10])
    assert recall(ids, truth) >= 0.95
    rescored = Int8Index(384, ranges=ranges, rescore_vectors=corpus, rescore_multiplier=2)
    rescored.add(np.arange(len(corpus)), corpus)
    ids, scores = rescored.search(queries, 10)
    assert recall(ids, truth) >= 0.99
    np.testing.assert_allclose(scores, np.einsum("qd,qkd->qk", queries, corpus[ids]), rtol=1e-5, atol=1e-6)


def test_int8_ranges_from_first_batch_and_errors() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((200, 8)).astype(np.float32)
    index = Int8Index(8)
    assert index.ranges is None
    index.add(np.arange(200), x)
    np.testing.assert_array_equal(index.ranges, np.vstack([x.min(0), x.max(0)]))
    index.add([500], x[:1] * 100)  # outside the ranges: clipped, ranges stay fixed
    np.testing.assert_array_equal(index.ranges, np.vstack([x.min(0), x.max(0)]))
    with pytest.raises(ValueError, match="single embedding"):
        Int8Index(8).add([1], x[:1])
    with pytest.raises(ValueError, match="not both"):
        Int8Index(8, ranges=np.ones((2, 8)), calibration_embeddings=x)
    with pytest.raises(ValueError, match="ranges must be"):
        Int8Index(8, ranges=np.ones((2, 7)))
    with pytest.raises(ValueError, match="below its minimum"):
        Int8Index(8, ranges=np.vstack([np.ones(8), np.zeros(8)]))


# ---------------------------------------------------------------- storage, save/load


@pytest.mark.parametrize("cls", [BinaryIndex, Int8Index])
def test_add_remove_replace(cls: type) -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((60, 16)).astype(np.float32)
    index = cls(16, rescore_vectors=lambda ids: stored[ids])
    stored = np.zeros((1000, 16), dtype=np.float32)
    stored[[5, 1, 9, 200, 3]] = x[:5]
    index.add([5, 1, 9], x[:3])
    index.add([200, 3], x[3:5])  # out of order: inserted into the sorted ids
    assert len(index) == 5 and 3 in index and 4 not in index and -3 not in index
    np.testing.assert_array_equal(index.ids(), [1, 3, 5, 9, 200])
    for i, row in zip([1, 3, 5, 9, 200], [1, 4, 0, 2, 3], strict=True):
        assert index.search(x[row], 1)[0][0, 0] == i
    assert index.remove([9, 9, 777]) == 1 and 9 not in index and len(index) == 4
    ids, scores = index.search(x[:5], 10)
    assert not (ids == 9).any() and (ids[:, 4:] == -1).all() and np.isneginf(scores[:, 4:]).all()
    index.add([5], x[10])  # replace
    stored[5] = x[10]
    assert len(index) == 4 and index.search(x[10], 1)[0][0, 0] == 5
    index.add(np.arange(300, 360), x)  # appended after the largest id, grows the buffers
    assert len(index) == 64 and index.search(x[59], 1)[0][0, 0] == 359
    with pytest.raises(ValueError, match="duplicate id"):
        index.add([7, 7], x[:2])
    with pytest.raises(ValueError, match="2 ids but 1 embeddings"):
        index.add([7, 8], x[:1])
    with pytest.raises(ValueError, match="17 dimensions"):
        index.add([7], np.ones((1, 17)))
    with pytest.raises(ValueError, match="k must be"):
        index.search(x[0], 0)
    with pytest.raises(ValueError, match="rescore_multiplier"):
        index.search(x[0], 1, rescore_multiplier=0)
    assert cls(16).search(x[0], 2)[0].tolist() == [[-1, -1]]


@pytest.mark.parametrize("cls", [BinaryIndex, Int8Index])
def test_save_load_view(cls: type, data: tuple, tmp_path: Path) -> None:
    corpus, queries, _ = data
    index = cls(384, rescore_vectors=corpus, rescore_multiplier=3)
    index.add(np.arange(len(corpus)), corpus)
    index.remove([0, 17])
    path = tmp_path / "q.idx"
    index.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["q.idx"]
    want = index.search(queries, 10)
    for view in (False, True):
        loaded = cls.load(path, view=view, rescore_vectors=corpus)
        assert loaded.get_config_dict() == index.get_config_dict() and loaded.is_view is view
        np.testing.assert_array_equal(loaded.ids(), index.ids())
        got = loaded.search(queries, 10)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    viewed = cls.load(path, view=True)
    assert viewed.memory_bytes() < index.memory_bytes() / 50  # the codes stay on disk
    with pytest.raises(ValueError, match="read-only"):
        viewed.add([1], corpus[:1])
    loaded = cls.load(path)
    loaded.add([0], corpus[:1])
    loaded.save(path)
    assert 0 in cls.load(path) and len(cls.load(path)) == len(index) + 1
    empty = cls(8)
    empty.save(tmp_path / "empty")
    assert len(cls.load(tmp_path / "empty", view=True)) == 0


def test_memory_per_vector() -> None:
    x = np.random.default_rng(6).standard_normal((1000, 384)).astype(np.float32)
    binary, int8 = BinaryIndex(384), Int8Index(384)
    binary.add(np.arange(1000), x)
    int8.add(np.arange(1000), x)
    assert binary.memory_bytes() == 1000 * (48 + 8)
    assert int8.memory_bytes() == 1000 * (384 + 8) + 2 * 384 * 4  # codes, ids, ranges


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        BinaryIndex.load(tmp_path / "nothing")
    index = BinaryIndex(64)
    index.add(np.arange(10), np.random.default_rng(7).standard_normal((10, 64)))
    index.save(tmp_path / "b")
    with pytest.raises(IndexFileError, match="expected 'munjang-int8'"):
        Int8Index.load(tmp_path / "b")
    data = (tmp_path / "b").read_bytes()
    (tmp_path / "cut").write_bytes(data[:40] + data[48:])
    with pytest.raises(IndexFileError, match="truncated or corrupt"):
        BinaryIndex.load(tmp_path / "cut")
    (tmp_path / "bad").write_bytes(data[:8] * 2 + data[16:])  # ids no longer increasing: garbled
    with pytest.raises(IndexFileError, match="checksum mismatch"):
        BinaryIndex.load(tmp_path / "bad")
    with pytest.raises(ValueError, match="dim"):
        BinaryIndex(0)
    with pytest.raises(ValueError, match="threads"):
        BinaryIndex(8, threads=-2)
