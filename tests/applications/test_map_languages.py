"""The collection map groups meanings, not languages: in the demo collection (7 topics, each in Korean
and English), once each script's vectors are centred the nearest points on the map share a topic more
often than a language; without it the map splits Korean from English."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from munjang import Collection, load_encoder
from munjang.applications.demo import demo_collection, demo_documents
from munjang.applications.projection import centre_groups, project_2d, script_groups, umap_available
from munjang.server import ServerSettings, create_app
from tests.helpers.server import LOCAL

K = 5


def shares(coords: np.ndarray, labels: list[str]) -> float:
    """Mean share of each point's K nearest points on the map that carry its label."""
    d = ((coords[:, None, :] - coords[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    nearest = np.argsort(d, axis=1)[:, :K]
    return float((np.asarray(labels)[nearest] == np.asarray(labels)[:, None]).mean())


def test_script_groups_and_centring():
    assert script_groups(["서울의 날씨", "The weather", "GPU 서버가 빠르다", "", "123"]) == [
        "hangul",
        "latin",
        "hangul",
        "latin",
        "latin",
    ]
    x = np.array([[1, 0], [1, 2], [3, 0], [9, 9], [9, 11], [11, 9]], dtype=np.float32)
    centred = centre_groups(x, ["a"] * 3 + ["b"] * 3)
    np.testing.assert_allclose(centred[:3].mean(0), x.mean(0), atol=1e-5)
    np.testing.assert_allclose(centred[3:].mean(0), x.mean(0), atol=1e-5)
    np.testing.assert_allclose(centred[1] - centred[0], x[1] - x[0])  # shapes within a group kept
    np.testing.assert_array_equal(centre_groups(x, ["a"] * 6), x)  # one script: unchanged
    empty = np.zeros((0, 4), dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no mean of an empty slice (a filter matching nothing)
        assert centre_groups(empty, []).shape == (0, 4)


@pytest.fixture(scope="module")
def demo_map(e5_path: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[np.ndarray, list, list]:
    encoder = load_encoder(e5_path, backend="torch", precision="fp32")
    folder = demo_collection(tmp_path_factory.mktemp("demo") / "demo", encoder, model=str(e5_path))
    with Collection.open(folder, encoder=encoder) as collection:
        docs, vectors = collection.sample(2000)
    return vectors, [d.metadata["topic"] for d in docs], [d.metadata["lang"] for d in docs]


@pytest.mark.parametrize("method", ["pca", pytest.param("umap", marks=pytest.mark.slow)])
def test_demo_map_neighbours_share_topic_more_than_language(demo_map, method):
    if method == "umap" and not umap_available():
        pytest.skip("umap-learn is not installed")
    vectors, topics, langs = demo_map
    groups = ["hangul" if lang == "ko" else "latin" for lang in langs]
    plain, _ = project_2d(vectors, method)
    assert shares(plain, langs) > 0.9  # the problem: split by language
    centred, _ = project_2d(vectors, method, groups=groups)
    assert shares(centred, topics) > shares(centred, langs)
    assert shares(centred, langs) < 0.65  # about chance (34 of 69 others share a language)
    assert shares(centred, topics) > shares(plain, topics) + 0.1


def test_the_map_route_centres_each_script(encoder, tmp_path):
    docs = demo_documents()
    with Collection.create(tmp_path / "demo", encoder=encoder) as collection:
        collection.add([d["id"] for d in docs], [d["text"] for d in docs], [d["metadata"] for d in docs])
    settings = ServerSettings(models={"mini": encoder}, collection_paths={"demo": tmp_path / "demo"})
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        answer = client.post("/v1/collections/demo/map", json={"method": "pca"})
    assert answer.status_code == 200, answer.text
    points = answer.json()["points"]
    coords = np.array([[p["x"], p["y"]] for p in points])
    langs = [p["metadata"]["lang"] for p in points]
    _, vectors = Collection.open(tmp_path / "demo", encoder=encoder).sample(2000)
    assert shares(project_2d(vectors, "pca")[0], langs) > 0.95  # uncentred, this model splits them
    assert shares(coords, langs) < 0.85


def test_asking_whether_umap_is_installed_does_not_import_it() -> None:
    """The map route asks on the server's event loop before it refuses a request; importing umap-learn
    (numba) there stalled every other route for seconds."""
    import subprocess
    import sys

    code = (
        "import sys; from munjang.applications.projection import umap_available; "
        "found = umap_available(); print(found, 'umap' in sys.modules, 'numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    found, umap_imported, numba_imported = out.split()
    assert found == str(umap_available()) and umap_imported == numba_imported == "False"
