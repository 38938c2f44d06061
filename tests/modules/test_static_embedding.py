"""StaticEmbedding parity with sentence-transformers: a static model saved by ST loads in munjang and
encodes the same vectors (1e-6), and one saved by munjang loads in ST with the same vectors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.torch import save_file
from sentence_transformers import SentenceTransformer

try:  # sentence-transformers >= 6 moved the modules; 3.2 to 5 only have the second path
    from sentence_transformers.sentence_transformer.modules import Normalize as STNormalize
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding as STStatic
except ImportError:  # pragma: no cover
    from sentence_transformers.models import Normalize as STNormalize  # type: ignore[no-redef]
    from sentence_transformers.models import StaticEmbedding as STStatic  # type: ignore[no-redef]
from tokenizers import Tokenizer

import munjang
from munjang.encoders.dense.encoder import SentenceEncoder
from munjang.inference.static_bag import encode_bags
from munjang.modules import Normalize, StaticEmbedding

TOLERANCE = 1e-6
SENTENCES = [
    "A man is playing a guitar on the stage.",
    "The new movie is awesome",
    "한 남자가 무대에서 기타를 연주하고 있다.",
    "오늘 서울의 날씨는 맑고 따뜻합니다.",
    "대한민국의 수도는 서울이다",
    "",
    "x " * 400,  # longer than the tokenizer's truncation
]


def _st_model(tokenizer_json: Path, dim: int, normalize: bool, seed: int = 0) -> SentenceTransformer:
    torch.manual_seed(seed)
    modules: list[Any] = [STStatic(Tokenizer.from_file(str(tokenizer_json)), embedding_dim=dim)]
    if normalize:
        modules.append(STNormalize())
    return SentenceTransformer(modules=modules, device="cpu")


@pytest.fixture(scope="module")
def st_minilm_static(minilm_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("st-static-minilm")
    _st_model(minilm_path / "tokenizer.json", 32, normalize=False).save(str(folder))
    return folder


def test_st_saved_static_model_loads_with_the_same_vectors(st_minilm_static: Path) -> None:
    encoder = munjang.load_encoder(st_minilm_static, device="cpu")
    assert isinstance(encoder[0], StaticEmbedding)
    assert encoder.static is encoder[0]
    assert encoder.get_embedding_dimension() == 32
    reference = SentenceTransformer(str(st_minilm_static), device="cpu")
    ours = encoder.encode(SENTENCES)
    assert ours.shape == (len(SENTENCES), 32) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, reference.encode(SENTENCES), atol=TOLERANCE, rtol=0)
    # one sentence -> one vector; batching does not change a vector; a prompt is prepended text
    np.testing.assert_allclose(encoder.encode(SENTENCES[2]), ours[2], atol=TOLERANCE, rtol=0)
    static = encoder.static
    assert static is not None
    small_batches = encode_bags(encoder, static, SENTENCES, dim=32, device=encoder.device, batch_size=2)
    np.testing.assert_allclose(small_batches.numpy(), ours, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(
        encoder.encode(SENTENCES, prompt="query: "),
        reference.encode(SENTENCES, prompt="query: "),
        atol=TOLERANCE,
        rtol=0,
    )
    tensor = encoder.encode(SENTENCES, convert_to_tensor=True, normalize_embeddings=True, truncate_dim=16)
    assert isinstance(tensor, torch.Tensor) and tensor.shape == (len(SENTENCES), 16)
    assert encoder.describe()["architecture"] == "StaticEmbedding"


def test_munjang_saved_static_model_loads_in_sentence_transformers(e5_path: Path, tmp_path: Path) -> None:
    """The e5 (XLM-R, 250k tokens) tokenizer, Korean and English, with Normalize: munjang saves, ST loads."""
    st_folder, ours_folder = tmp_path / "st", tmp_path / "ours"
    _st_model(e5_path / "tokenizer.json", 8, normalize=True, seed=1).save(str(st_folder))
    encoder = munjang.load_encoder(st_folder, device="cpu")
    assert isinstance(encoder[-1], Normalize)
    encoder.save(ours_folder)
    assert {p.name for p in ours_folder.iterdir()} >= {"modules.json", "model.safetensors", "tokenizer.json"}
    reference = SentenceTransformer(str(ours_folder), device="cpu")
    expected = SentenceTransformer(str(st_folder), device="cpu").encode(SENTENCES)
    np.testing.assert_allclose(reference.encode(SENTENCES), expected, atol=TOLERANCE, rtol=0)
    reloaded = munjang.load_encoder(ours_folder, device="cpu")
    np.testing.assert_allclose(reloaded.encode(SENTENCES), expected, atol=TOLERANCE, rtol=0)


def test_model2vec_weights_fold_as_sentence_transformers_does(minilm_path: Path, tmp_path: Path) -> None:
    """A model2vec-style model.safetensors (embeddings + per-token weights) loads like ST loads it."""
    st = _st_model(minilm_path / "tokenizer.json", 4, normalize=False)
    st.save(str(tmp_path))
    table = torch.randn(30522, 4)
    save_file({"embeddings": table, "weights": torch.rand(30522)}, str(tmp_path / "model.safetensors"))
    expected = SentenceTransformer(str(tmp_path), device="cpu").encode(SENTENCES)
    ours = munjang.load_encoder(tmp_path, device="cpu").encode(SENTENCES)
    np.testing.assert_allclose(ours, expected, atol=TOLERANCE, rtol=0)


def test_transformer_only_calls_say_so_for_a_static_model(st_minilm_static: Path) -> None:
    encoder = munjang.load_encoder(st_minilm_static, device="cpu")
    with pytest.raises(ValueError, match="torch only"):
        encoder.encode(["hi"], backend="onnx")
    with pytest.raises(ValueError, match="torch only"):
        munjang.load_encoder(st_minilm_static, device="cpu", backend="onnx")
    with pytest.raises(ValueError, match="sentence embeddings only"):
        encoder.encode(["hi"], output_value="token_embeddings")
    with pytest.raises(ValueError, match="no pooling"):
        munjang.load_encoder(st_minilm_static, device="cpu", pooling="cls")
    with pytest.raises(TypeError, match="static"):
        _ = encoder.transformer


def test_training_features_run_through_the_pipeline(minilm_path: Path) -> None:
    tokenizer = Tokenizer.from_file(str(minilm_path / "tokenizer.json"))
    encoder = SentenceEncoder([StaticEmbedding(tokenizer, embedding_dim=8), Normalize()], device="cpu")
    features = encoder.tokenize(SENTENCES[:3])
    out = encoder(features)["sentence_embedding"]
    assert out.shape == (3, 8) and out.requires_grad
    np.testing.assert_allclose(out.detach().numpy(), encoder.encode(SENTENCES[:3]), atol=TOLERANCE, rtol=0)
