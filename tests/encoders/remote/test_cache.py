"""The disk cache of remote embeddings: keyed by base URL, model, dimensions and text; shared by
connections (as by processes) through its file."""

from __future__ import annotations

import numpy as np

from munjang.encoders.remote import EmbeddingCache
from munjang.encoders.remote.cache import default_cache_path


def test_vectors_come_back_by_key_only(tmp_path):
    cache = EmbeddingCache(tmp_path / "c.sqlite3")
    vectors = np.arange(6, dtype=np.float32).reshape(2, 3)
    cache.put("http://a/v1", "m", None, ["x", "y"], vectors)
    got = cache.get("http://a/v1", "m", None, ["y", "z", "x", "y"])
    assert sorted(got) == ["x", "y"]
    np.testing.assert_array_equal(got["y"], vectors[1])
    assert cache.get("http://b/v1", "m", None, ["x"]) == {}
    assert cache.get("http://a/v1", "other", None, ["x"]) == {}
    assert cache.get("http://a/v1", "m", 2, ["x"]) == {}
    cache.close()
    reopened = EmbeddingCache(tmp_path / "c.sqlite3")
    assert len(reopened) == 2
    many = [f"t{i}" for i in range(1200)]  # more than one lookup statement's worth
    reopened.put("u", "m", 3, many, np.ones((1200, 3), dtype=np.float32))
    assert len(reopened.get("u", "m", 3, many)) == 1200


def test_default_place_is_under_the_munjang_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("MUNJANG_CACHE", str(tmp_path))
    assert default_cache_path() == tmp_path / "remote" / "embeddings.sqlite3"
