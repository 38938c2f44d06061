"""The mapped exact index answers as `ExactIndex` holding the same vectors: saved, mapped, then
added to, removed from (in the saved part and after it), replaced, filtered, with tied scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from munjang.search.index.exact import ExactIndex
from munjang.search.index.mapped_exact import MappedExactIndex


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_mapped_exact_answers_as_exact(tmp_path: Path, metric: str) -> None:
    rng = np.random.default_rng(0)
    dim = 8
    vectors = rng.standard_normal((300, dim)).astype(np.float32)
    vectors[50:60] = vectors[40]  # tied scores: the lower label first
    labels = np.arange(1, 301, dtype=np.int64) * 3
    reference = ExactIndex(dim, metric)
    reference.add(labels, vectors)
    MappedExactIndex.save(reference, tmp_path / "x.exact")
    mapped = MappedExactIndex.load(tmp_path / "x.exact", dim, metric)
    assert not mapped._base.flags.writeable  # mapped from the file, not copied

    def same(k: int, allowed: np.ndarray | None = None) -> None:
        queries = np.concatenate([rng.standard_normal((5, dim)).astype(np.float32), vectors[40:41]])
        want = reference.search(queries, k, allowed=allowed)
        got = mapped.search(queries, k, allowed=allowed)
        np.testing.assert_array_equal(got[0], want[0])
        # float32 rounding: the two may sum a dot product in another order (the mapped array's
        # alignment can pick another SIMD path), so scores near 0 get an absolute tolerance too.
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-5)
        assert len(mapped) == len(reference)
        np.testing.assert_array_equal(mapped.ids(), reference.ids())

    same(10)
    same(400)
    extra = rng.standard_normal((40, dim)).astype(np.float32)
    for index in (reference, mapped):
        index.add(np.arange(1000, 1040), extra)  # after the saved part
        index.remove(labels[::7])  # in the saved part
        index.remove(np.asarray([1003, 1010, 5]))  # after it, and absent
        index.add(labels[1:3], extra[:2])  # replacing saved vectors
    same(10)
    same(1000)
    allowed = np.concatenate([labels[::4], np.arange(1000, 1040, 3)])
    same(10, allowed)
    same(500, allowed)
    np.testing.assert_array_equal(mapped.vectors(), reference.vectors())
    assert 1000 in mapped and int(labels[0]) not in mapped and int(labels[1]) in mapped


def test_a_damaged_matrix_file_is_refused(tmp_path: Path) -> None:
    index = ExactIndex(4)
    index.add(np.arange(10), np.ones((10, 4), np.float32))
    MappedExactIndex.save(index, tmp_path / "x.exact")
    with pytest.raises(ValueError):
        MappedExactIndex.load(tmp_path / "x.exact", 5, "cosine")
    data = (tmp_path / "x.exact").read_bytes()
    (tmp_path / "x.exact").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError):
        MappedExactIndex.load(tmp_path / "x.exact", 4, "cosine")


def test_a_reader_maps_the_saved_matrix_and_catches_up(tmp_path: Path, encoder) -> None:  # type: ignore[no-untyped-def]
    """A folder collection's exact index saved by `flush`, then added to and deleted from: a reader
    maps the file, replays the rest, and ranks as an exact index rebuilt from the store."""
    from munjang.search import Collection

    folder = tmp_path / "c"
    texts = [f"문서 {i} 고양이 시장 {'주식' * (i % 3)} w{i % 7}" for i in range(60)]
    with Collection.create(folder, encoder=encoder) as writer:
        writer.add([f"d{i}" for i in range(40)], texts[:40])
        writer.flush()
        writer.add([f"d{i}" for i in range(40, 60)], texts[40:])
        writer.delete([f"d{i}" for i in range(0, 60, 5)])
        writer.upsert(["d1"], ["갱신된 문서"])
    assert len(list(folder.glob("dense-*.exact"))) == 1
    with Collection.open(folder, encoder=encoder, readonly=True) as reader:
        reader.dense.sync(reader.store)
        assert isinstance(reader.dense.index, MappedExactIndex)
        rebuilt = ExactIndex(reader.dense.dim, reader.dense.metric)
        for labels, vectors in reader.store.vectors_after(reader.config["model"], reader.dense.dim, 0):
            rebuilt.add(labels, vectors)
        np.testing.assert_array_equal(reader.dense.index.ids(), rebuilt.ids())
        queries = encoder.encode(["고양이 시장", "주식", "갱신"], convert_to_numpy=True)
        got, want = reader.dense.index.search(queries, 50), rebuilt.search(queries, 50)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5)
        assert reader.check() == []
