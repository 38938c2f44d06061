"""Image collections: images added from files and bytes are stored in the collection by content hash
and found by text and by image (the same vectors the encoder gives them); a broken file is reported
and the rest are added; the collection round-trips through close and open; stored files are only
ever reached by their content-hash name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import munjang
from munjang.search import Collection
from munjang.search.backends.base import CollectionError
from munjang.search.collection.image_files import IMAGE_FIELD, ImageFiles, document_input, image_name
from tests.helpers.tiny_clip import random_image, save_st_clip, write_images


@pytest.fixture(scope="module")
def clip_encoder(tmp_path_factory: pytest.TempPathFactory) -> munjang.SentenceEncoder:
    folder = save_st_clip(tmp_path_factory.mktemp("clip") / "st")
    return munjang.load_encoder(folder, device="cpu")


def test_image_collection_round_trip(clip_encoder: munjang.SentenceEncoder, tmp_path: Path) -> None:
    files = write_images(tmp_path / "pics", 5)
    broken = tmp_path / "pics" / "broken.jpg"
    broken.write_bytes(b"\xff\xd8 not really a jpeg")
    col = Collection.create(tmp_path / "col", clip_encoder.model_folder, encoder=clip_encoder)
    result = col.add_images([*files[:3], broken, *files[3:]])
    assert (result.added, len(result.failed)) == (5, 1) and "broken.jpg" in result.failed[0]
    stored = sorted(p.name for p in (tmp_path / "col" / "images").iterdir())
    assert len(stored) == 5 and all(len(name.split(".")[0]) == 64 for name in stored)

    expected = clip_encoder.encode(files)
    _, vectors = col.sample()
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    hits = col.search(random_image(102), k=3)  # the pixels of files[2]
    assert hits[0].id == "image2.png" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[0].metadata["file"] == "image2.png" and image_name(hits[0].metadata) is not None
    assert col.search(files[4], k=1)[0].id == "image4.png"
    by_text = col.search("the cat", k=5)
    assert sorted(h.id for h in by_text) == sorted(f.name for f in files)
    col.close()

    again = Collection.open(tmp_path / "col", encoder=clip_encoder)
    assert len(again) == 5 and again.search(files[1], k=1)[0].id == "image1.png"
    assert not again.check()
    data = files[0].read_bytes()
    result = again.add_images([data], ids=["same-pixels"], suffixes=[".png"], metadata=[{"tag": "x"}])
    assert (result.added, result.encoded) == (1, 0)  # the same picture: its vector comes from the cache
    assert again.get(["same-pixels"])[0].metadata["tag"] == "x"
    with pytest.raises(ValueError, match="dense mode"):
        again.search(files[0], mode="hybrid")
    again.close()


def test_image_documents_need_a_clip_model(encoder: munjang.SentenceEncoder, tmp_path: Path) -> None:
    col = Collection.create(tmp_path / "text", encoder=encoder)
    with pytest.raises(CollectionError, match="does not encode images"):
        col.add_images(write_images(tmp_path / "pics", 1))
    col.close()


def test_only_content_hash_names_reach_a_file(tmp_path: Path) -> None:
    images = ImageFiles(tmp_path / "images")
    (tmp_path / "secret.png").write_bytes(b"x")
    name = images.put(write_images(tmp_path / "pics", 1)[0])
    assert images.path(name) == tmp_path / "images" / name
    for bad in ("../secret.png", str(tmp_path / "secret.png"), "a" * 64 + ".txt", None, 3, "A" * 64 + ".png"):
        assert images.path(bad) is None
    assert document_input("caption", f'{{"{IMAGE_FIELD}": "../secret.png"}}', images) == "caption"
    assert document_input("caption", f'{{"{IMAGE_FIELD}": "{name}"}}', images) == images.path(name)
    with pytest.raises(munjang.MunjangError, match="not an image type"):
        images.put(b"data", ".svg")
