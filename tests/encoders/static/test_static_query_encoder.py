"""The numpy static encoder gives a static model's vectors as sentence-transformers does (plain and
normalized, with prompts, empty texts, model2vec tables), says None for other models, and lets a
collection of a static model answer hybrid searches without importing torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

try:  # sentence-transformers >= 6 moved the modules
    from sentence_transformers.sentence_transformer.modules import Normalize as STNormalize
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding as STStatic
except ImportError:  # pragma: no cover
    from sentence_transformers.models import Normalize as STNormalize  # type: ignore[no-redef]
    from sentence_transformers.models import StaticEmbedding as STStatic  # type: ignore[no-redef]
from tokenizers import Tokenizer

import munjang
from munjang.encoders.static.query_encoder import StaticQueryEncoder

SENTENCES = [
    "A man is playing a guitar on the stage.",
    "한 남자가 무대에서 기타를 연주하고 있다.",
    "오늘 서울의 날씨는 맑고 따뜻합니다.",
    "",
    "x " * 400,  # longer than the tokenizer's truncation
]


def _static_folder(tokenizer_json: Path, folder: Path, normalize: bool) -> Path:
    torch.manual_seed(0)
    modules: list[Any] = [STStatic(Tokenizer.from_file(str(tokenizer_json)), embedding_dim=24)]
    if normalize:
        modules.append(STNormalize())
    prompts = {"query": "query: ", "passage": "passage: "}
    SentenceTransformer(modules=modules, device="cpu", prompts=prompts).save(str(folder))
    return folder


@pytest.mark.parametrize("normalize", [False, True])
def test_the_numpy_encoder_gives_sentence_transformers_vectors(
    e5_path: Path, tmp_path: Path, normalize: bool
) -> None:
    folder = _static_folder(e5_path / "tokenizer.json", tmp_path / "static", normalize)
    numpy_encoder = StaticQueryEncoder.load(folder)
    assert numpy_encoder is not None and numpy_encoder.get_embedding_dimension() == 24
    reference = SentenceTransformer(str(folder), device="cpu")
    torch_encoder = munjang.load_encoder(folder, device="cpu")
    for prompt_name in (None, "query"):
        want = reference.encode(SENTENCES, prompt_name=prompt_name, convert_to_numpy=True)
        got = numpy_encoder.encode(SENTENCES, prompt_name=prompt_name)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)  # summed in another order
        mine = torch_encoder.encode(SENTENCES, prompt_name=prompt_name, convert_to_numpy=True)
        np.testing.assert_allclose(got, mine, rtol=1e-5, atol=1e-6)
    assert not numpy_encoder.encode([""]).any()  # an empty text is the zero vector, as in torch
    np.testing.assert_allclose(numpy_encoder.encode("서울"), numpy_encoder.encode(["서울"])[0])
    with pytest.raises(ValueError, match="unknown prompt name 'nope'"):
        numpy_encoder.encode(["a"], prompt_name="nope")


def test_model2vec_tables_and_other_models(minilm_path: Path, tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    folder = _static_folder(minilm_path / "tokenizer.json", tmp_path / "m2v", normalize=False)
    vocab = Tokenizer.from_file(str(minilm_path / "tokenizer.json")).get_vocab_size()
    rng = np.random.default_rng(0)
    embeddings = rng.standard_normal((100, 24)).astype(np.float32)
    mapping = rng.integers(0, 100, vocab).astype(np.int64)
    weights = rng.random(vocab).astype(np.float32)
    save_file(
        {"embeddings": embeddings, "mapping": mapping, "weights": weights}, str(folder / "model.safetensors")
    )
    got = StaticQueryEncoder.load(folder)
    assert got is not None
    want = munjang.load_encoder(folder, device="cpu").encode(SENTENCES, convert_to_numpy=True)
    np.testing.assert_allclose(got.encode(SENTENCES), want, atol=1e-5)
    assert StaticQueryEncoder.load(minilm_path) is None  # a transformer model
    assert StaticQueryEncoder.load(tmp_path) is None  # no model at all


def test_a_static_collection_answers_hybrid_searches_without_torch(e5_path: Path, tmp_path: Path) -> None:
    folder = _static_folder(e5_path / "tokenizer.json", tmp_path / "static", normalize=True)
    texts = {"a": "학교에 갔습니다", "b": "사과와 배를 샀다", "c": "A cat sleeps on the sofa."}
    with munjang.search.Collection.create(
        tmp_path / "c", folder, query_prompt_name="query", document_prompt_name="passage"
    ) as c:
        c.add(list(texts), list(texts.values()))
        want = {q: [(h.id, round(h.score, 5)) for h in c.search(q, k=3)] for q in ("학교", "sofa cat")}
    probe = (
        "import json, sys\n"
        "from munjang.search import Collection\n"
        f"c = Collection.open({str(tmp_path / 'c')!r}, readonly=True)\n"
        "got = {q: [(h.id, round(h.score, 5)) for h in c.search(q, k=3)] for q in ('학교', 'sofa cat')}\n"
        "print(json.dumps([got, 'torch' in sys.modules, type(c.query_encoder).__name__]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    got, torch_loaded, kind = json.loads(out.stdout)
    assert kind == "StaticQueryEncoder" and not torch_loaded, out.stderr[-2000:]
    assert {q: [tuple(h) for h in hits] for q, hits in got.items()} == want
