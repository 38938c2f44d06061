"""CLIP parity with sentence-transformers on a tiny random CLIP: folders ST saves (its CLIPModel
module, and the generic Transformer of v5.4+) load in munjang with the same text and image vectors
(1e-5); a folder munjang saves loads in ST with the same vectors; a plain Hugging Face CLIP checkpoint
loads as ST loads it (one module, no pooling)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

import munjang
from munjang.modules import CLIPModel
from tests.helpers.tiny_clip import PROJECTION_DIM, random_image, save_hf_clip, save_st_clip

TOLERANCE = 1e-5
TEXTS = ["the cat", "a dog on the mat", "the quick brown fox 42", "z" * 60]  # the last one is truncated


@pytest.fixture(scope="module")
def images() -> list[Any]:
    return [random_image(i, size=(24 + 8 * i, 40)) for i in range(4)]


@pytest.fixture(scope="module")
def st_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_st_clip(tmp_path_factory.mktemp("clip") / "st")


@pytest.fixture(scope="module")
def hf_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_hf_clip(tmp_path_factory.mktemp("clip") / "hf", seed=1)


def _assert_same(encoder: munjang.SentenceEncoder, reference: SentenceTransformer, images: list[Any]) -> None:
    np.testing.assert_allclose(encoder.encode(TEXTS), reference.encode(TEXTS), atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(encoder.encode(images), reference.encode(images), atol=TOLERANCE, rtol=0)


def test_st_saved_clip_loads_with_the_same_text_and_image_vectors(st_clip: Path, images: list[Any]) -> None:
    types = [entry["type"] for entry in json.loads((st_clip / "modules.json").read_text())]
    assert types == ["sentence_transformers.sentence_transformer.modules.clip_model.CLIPModel"]
    encoder = munjang.load_encoder(st_clip, device="cpu")
    assert isinstance(encoder[0], CLIPModel) and encoder.clip is encoder[0] and len(encoder) == 1
    assert encoder.get_embedding_dimension() == PROJECTION_DIM
    assert encoder.describe()["architecture"] == "CLIPModel"
    _assert_same(encoder, SentenceTransformer(str(st_clip), device="cpu"), images)


def test_st_v6_transformer_typed_clip_loads(hf_clip: Path, tmp_path: Path, images: list[Any]) -> None:
    reference = SentenceTransformer(str(hf_clip), device="cpu")
    reference.save(str(tmp_path / "st6"))
    types = [entry["type"] for entry in json.loads((tmp_path / "st6" / "modules.json").read_text())]
    assert types[0].endswith(".Transformer")  # ST 6 writes the generic module for CLIP
    encoder = munjang.load_encoder(tmp_path / "st6", device="cpu")
    assert encoder.clip is not None
    _assert_same(encoder, reference, images)


def test_plain_hf_checkpoint_loads_as_one_module(hf_clip: Path, images: list[Any]) -> None:
    assert not (hf_clip / "modules.json").exists()
    encoder = munjang.load_encoder(hf_clip, device="cpu")
    assert len(encoder) == 1 and encoder.clip is not None
    _assert_same(encoder, SentenceTransformer(str(hf_clip), device="cpu"), images)


def test_classic_st_layout_with_a_module_folder_loads(tmp_path: Path, images: list[Any]) -> None:
    """The layout of the hub's sentence-transformers/clip-ViT-B-32: the model in `0_CLIPModel/`."""
    folder = tmp_path / "classic"
    save_hf_clip(folder / "0_CLIPModel", seed=2)
    entry = {"idx": 0, "name": "0", "path": "0_CLIPModel", "type": "sentence_transformers.models.CLIPModel"}
    (folder / "modules.json").write_text(json.dumps([entry]))
    encoder = munjang.load_encoder(folder, device="cpu")
    assert encoder.clip is not None
    _assert_same(encoder, SentenceTransformer(str(folder), device="cpu"), images)


def test_munjang_saved_clip_loads_in_st(st_clip: Path, tmp_path: Path, images: list[Any]) -> None:
    encoder = munjang.load_encoder(st_clip, device="cpu")
    encoder.save(tmp_path / "saved")
    entries = json.loads((tmp_path / "saved" / "modules.json").read_text())
    assert entries == [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.CLIPModel"}]
    _assert_same(encoder, SentenceTransformer(str(tmp_path / "saved"), device="cpu"), images)
    again = munjang.load_encoder(tmp_path / "saved", device="cpu")
    np.testing.assert_allclose(again.encode(images), encoder.encode(images), atol=TOLERANCE, rtol=0)


def test_texts_and_images_in_one_call_keep_their_order(
    st_clip: Path, images: list[Any], tmp_path: Path
) -> None:
    encoder = munjang.load_encoder(st_clip, device="cpu")
    images[1].save(tmp_path / "one.png")
    mixed = encoder.encode([TEXTS[0], images[0], tmp_path / "one.png", TEXTS[1]], batch_size=1)
    apart = np.stack([encoder.encode(TEXTS[0]), encoder.encode(images[0]), encoder.encode(images[1]),
                      encoder.encode(TEXTS[1])])  # fmt: skip
    np.testing.assert_allclose(mixed, apart, atol=TOLERANCE, rtol=0)
    assert encoder.encode(images[0]).shape == (PROJECTION_DIM,)


def test_a_str_is_always_text(st_clip: Path, images: list[Any], tmp_path: Path) -> None:
    encoder = munjang.load_encoder(st_clip, device="cpu")
    path = tmp_path / "cat.png"
    images[0].save(path)
    as_text = encoder.encode(str(path))
    assert not np.allclose(as_text, encoder.encode(path), atol=1e-3)
    np.testing.assert_allclose(as_text, encoder.encode([str(path)])[0], atol=TOLERANCE, rtol=0)


def test_options_and_bad_inputs(st_clip: Path, images: list[Any]) -> None:
    encoder = munjang.load_encoder(st_clip, device="cpu")
    unit = encoder.encode(images, normalize_embeddings=True, truncate_dim=8)
    assert unit.shape == (len(images), 8)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-5)
    with pytest.raises(TypeError, match=r"sentences\[1\] is int"):
        encoder.encode(["the cat", 3])
    with pytest.raises(ValueError, match="sentence embeddings only"):
        encoder.encode(TEXTS, output_value="token_embeddings")
    with pytest.raises(ValueError, match="torch only"):
        encoder.encode(TEXTS, backend="onnx")


def test_a_text_model_refuses_images(encoder: munjang.SentenceEncoder, images: list[Any]) -> None:
    with pytest.raises(TypeError, match="not str"):
        encoder.encode(["a sentence", images[0]])


def test_weightless_or_non_clip_folders_are_refused(hf_clip: Path, tmp_path: Path) -> None:
    folder = tmp_path / "nosafe"
    folder.mkdir()
    (folder / "config.json").write_text((hf_clip / "config.json").read_text())
    with pytest.raises(munjang.ModelLoadError, match="no weights"):
        CLIPModel.load(folder)
    (folder / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(munjang.ModelLoadError, match="not describe a CLIP"):
        CLIPModel.load(folder)
