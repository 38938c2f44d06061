"""Image collections in snapshots: the image files their passages name travel in the archive
(checksummed under their content-hash names) and come back whole; a backend that keeps no image
files is refused before anything is made; an altered, oversized or misnamed image member is refused."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

import munjang
from munjang.search.collection.collection import Collection
from munjang.search.collection.snapshot_format import SnapshotError, content_checksum
from tests.helpers.collection_backends import qdrant_url
from tests.helpers.tiny_clip import image_collection, random_image, save_st_clip


@pytest.fixture(scope="module")
def clip_encoder(tmp_path_factory: pytest.TempPathFactory) -> munjang.SentenceEncoder:
    folder = save_st_clip(tmp_path_factory.mktemp("clip") / "st")
    return munjang.load_encoder(folder, device="cpu")


@pytest.fixture
def exported(clip_encoder: munjang.SentenceEncoder, tmp_path: Path) -> tuple[Path, Path]:
    """An image collection of 4 pictures and its snapshot."""
    folder, _ = image_collection(tmp_path / "pics-col", clip_encoder, count=4)
    with Collection.open(folder, encoder=clip_encoder, readonly=True) as col:
        manifest = col.export(tmp_path / "pics.snapshot")
    assert len(manifest["images"]) == 4 and manifest["images_missing"] == []
    return folder, tmp_path / "pics.snapshot"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((folder / "images").iterdir())}


@pytest.mark.parametrize("target", ["folder", "qdrant"])
def test_the_images_come_back_whole_and_answer_the_same(
    target: str, exported: tuple[Path, Path], clip_encoder: munjang.SentenceEncoder, tmp_path: Path
) -> None:
    folder, snapshot = exported
    if target == "folder":
        restored = Collection.import_(snapshot, tmp_path / "back", encoder=clip_encoder)
    else:
        restored = Collection.import_(snapshot, "back", backend=qdrant_url(tmp_path), encoder=clip_encoder)
    with restored, Collection.open(folder, encoder=clip_encoder, readonly=True) as original:
        back = Path(restored.location)
        assert _files(back) == _files(folder)
        for stored, data in _files(back).items():
            assert hashlib.sha256(data).hexdigest() == stored.split(".")[0]
        query = random_image(102)  # the pixels of image2.png
        want = [(h.id, h.score) for h in original.search(query, k=4)]
        got = [(h.id, h.score) for h in restored.search(query, k=4)]
        assert [i for i, _ in got] == [i for i, _ in want] and got[0][0] == "image2.png"
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
        for doc in restored.get(["image0.png", "image3.png"]):
            assert doc is not None and restored.images is not None
            assert restored.images.path(doc.metadata["image"]) is not None


def test_a_database_that_keeps_no_image_files_is_refused_first(
    exported: tuple[Path, Path], postgres_url: str
) -> None:
    _, snapshot = exported
    with pytest.raises(SnapshotError, match="image files"):
        Collection.import_(snapshot, "pics", backend=postgres_url)
    assert "pics" not in Collection.names(postgres_url)


def _rewrite(source: Path, target: Path, change: Any) -> Path:
    """A copy of a snapshot with `change(name, data)` -> [(name, data), ...] applied to each member."""
    with tarfile.open(source) as src, tarfile.open(target, "w") as dst:
        for member in src.getmembers():
            f = src.extractfile(member)
            assert f is not None
            for name, data in change(member.name, f.read()):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                dst.addfile(info, io.BytesIO(data))
    return target


def _other_image(name: str, data: bytes) -> list[tuple[str, bytes]]:
    """Other bytes for every image, with a manifest (and content checksum) made to match them: only
    the content-hash names then lie."""
    other = b"x" * 10
    if name == "manifest.json":
        manifest = json.loads(data)
        for image in manifest["images"]:
            image["sha256"], image["bytes"] = hashlib.sha256(other).hexdigest(), len(other)
        manifest["content_sha256"] = content_checksum(manifest["shards"], manifest["images"])
        return [(name, json.dumps(manifest).encode())]
    return [(name, other if name.startswith("images/") else data)]


BAD = {
    "flipped image byte": (
        lambda n, d: [(n, d[:-1] + bytes([d[-1] ^ 1]) if n.startswith("images/") else d)],
        "checksum",
    ),
    "image outside images/": (
        lambda n, d: [(n.replace("images/", "images/../../") if n.startswith("images/") else n, d)],
        "unexpected archive member",
    ),
    "image missing": (lambda n, d: [] if n.startswith("images/") else [(n, d)], "shards"),
    "image not its hash": (_other_image, "not an image file a snapshot carries"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_image_member_is_refused_and_nothing_made(
    case: str, exported: tuple[Path, Path], tmp_path: Path
) -> None:
    _, snapshot = exported
    change, message = BAD[case]
    bad = _rewrite(snapshot, tmp_path / "bad.snapshot", change)
    with pytest.raises(SnapshotError, match=message):
        Collection.import_(bad, tmp_path / "restored")
    assert not (tmp_path / "restored").exists()
    assert not (tmp_path.parent / "images").exists()


def test_an_image_missing_from_the_folder_is_named_and_the_rest_exported(
    clip_encoder: munjang.SentenceEncoder, tmp_path: Path
) -> None:
    folder, _ = image_collection(tmp_path / "pics-col", clip_encoder, count=3)
    lost = sorted((folder / "images").iterdir())[0]
    lost.unlink()
    with (
        Collection.open(folder, encoder=clip_encoder, readonly=True) as col,
        pytest.warns(UserWarning, match="1 image files"),
    ):
        manifest = col.export(tmp_path / "pics.snapshot")
    assert manifest["images_missing"] == [lost.name]
    assert sorted(i["name"] for i in manifest["images"]) == [
        f"images/{p.name}" for p in sorted((folder / "images").iterdir())
    ]
