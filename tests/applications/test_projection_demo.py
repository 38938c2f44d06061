"""2-D projection (PCA parity with scikit-learn) and the bundled demo collection."""

from __future__ import annotations

import numpy as np
import pytest

from munjang import Collection
from munjang.applications.demo import demo_collection, demo_documents
from munjang.applications.projection import pca_2d, project_2d, umap_available


def test_pca_matches_scikit_learn_up_to_sign_and_is_deterministic():
    from sklearn.decomposition import PCA

    x = np.random.default_rng(0).normal(size=(80, 24)).astype(np.float32)
    got = pca_2d(x)
    want = PCA(2).fit_transform(x)
    np.testing.assert_allclose(np.abs(got), np.abs(want), atol=1e-4)
    np.testing.assert_array_equal(got, pca_2d(x.copy()))
    assert got.dtype == np.float32 and got.shape == (80, 2)


def test_project_2d_edge_cases_and_errors():
    assert project_2d(np.zeros((0, 4)))[0].shape == (0, 2)
    assert project_2d(np.ones((1, 4)))[0].tolist() == [[0.0, 0.0]]
    coords, method = project_2d(np.eye(2, 4, dtype=np.float32), "pca")
    assert coords.shape == (2, 2) and method == "pca"
    with pytest.raises(ValueError, match="unknown method"):
        project_2d(np.eye(4), "tsne")
    with pytest.raises(ValueError, match="2-D"):
        project_2d(np.ones(4))
    if not umap_available():
        with pytest.raises(ValueError, match="umap-learn"):
            project_2d(np.eye(20), "umap")
        assert project_2d(np.random.default_rng(1).normal(size=(30, 8)))[1] == "pca"


@pytest.mark.slow  # 11 s of UMAP
def test_umap_map_keeps_clusters_apart_and_is_reproducible():
    """With umap-learn installed (the dev extra), "umap" and "auto" give a seeded UMAP map in
    which every point's nearest neighbour on the map is from its own cluster."""
    if not umap_available():
        pytest.fail("umap-learn is part of the dev extra: install it (make install-dev)")
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(3, 32)) * 4
    labels = np.repeat(np.arange(3), 20)
    x = (centres[labels] + rng.normal(size=(60, 32))).astype(np.float32)
    coords, method = project_2d(x, "umap", seed=7)
    assert method == "umap" and coords.shape == (60, 2) and np.isfinite(coords).all()
    d = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    np.fill_diagonal(d, np.inf)
    assert (labels[d.argmin(axis=1)] == labels).all()
    again, _ = project_2d(x, "umap", seed=7)
    np.testing.assert_allclose(again, coords, atol=1e-5)
    assert project_2d(x)[1] == "umap"
    assert project_2d(x[:10])[1] == "pca", "too few points for a neighbourhood graph"


def test_demo_collection_is_built_once_and_rebuilt_when_broken(encoder, tmp_path):
    docs = demo_documents()
    assert len(docs) == 70
    assert {d["metadata"]["lang"] for d in docs} == {"ko", "en"}
    assert len({d["metadata"]["topic"] for d in docs}) == 7
    folder = demo_collection(tmp_path / "demo", encoder)
    with Collection.open(folder, encoder=encoder) as collection:
        assert len(collection) == 70 and collection.check() == []
        hits = collection.search("서울에 비가 온다", 3, mode="hybrid")
        assert hits[0].id == "weather-ko-0"
        economy = collection.search("stock market crash", 3, mode="hybrid")  # the README's query, in English
        assert economy[0].metadata["topic"] == "economy"
    stamp = (folder / "collection.db").stat().st_mtime_ns
    assert demo_collection(folder, encoder) == folder
    assert (folder / "collection.db").stat().st_mtime_ns == stamp, "a sound demo collection is reused"
    (folder / "collection.db").write_bytes(b"not a database")
    demo_collection(folder, encoder)
    with Collection.open(folder, encoder=encoder) as collection:
        assert len(collection) == 70 and collection.check() == []
