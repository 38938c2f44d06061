"""`encode_query` / `encode_document` on every encoder kind, with sentence-transformers' prompt rule:
the model's "query" prompt for queries, its "document", else "passage", else "corpus" prompt for
documents, unless the caller names a prompt (or gives literal text); without one, plain `encode`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

import munjang
from munjang.encoders.m3 import load_m3_encoder
from munjang.encoders.remote import RemoteEncoder
from munjang.encoders.settings import side_prompt_name
from munjang.encoders.static.query_encoder import StaticQueryEncoder
from tests.encoders.static.test_static_query_encoder import _static_folder
from tests.helpers.m3 import tiny_m3
from tests.helpers.training import tiny_bert

TEXTS = ["한 남자가 기타를 친다.", "A man is playing a guitar.", "서울의 날씨는 맑다."]


def test_the_prompt_rule() -> None:
    prompts = {"query": "q: ", "passage": "p: ", "corpus": "c: "}
    assert side_prompt_name(prompts, "query", None, None) == "query"
    assert side_prompt_name(prompts, "document", None, None) == "passage"
    assert side_prompt_name({**prompts, "document": "d: "}, "document", None, None) == "document"
    assert side_prompt_name({"corpus": "c: "}, "document", None, None) == "corpus"
    assert side_prompt_name({}, "query", None, None) is None  # the default prompt, if any, applies
    assert side_prompt_name(prompts, "query", "passage", None) == "passage"  # the caller's wins
    assert side_prompt_name(prompts, "query", None, "") is None  # literal text wins, even empty
    with pytest.raises(ValueError, match="side must be"):
        side_prompt_name(prompts, "passage", None, None)


def test_without_prompts_both_are_encode(encoder: munjang.SentenceEncoder) -> None:
    """The embedded all-MiniLM-L6-v2 has no prompts: both sides encode as `encode` does."""
    assert not encoder.prompts
    plain = encoder.encode(TEXTS)
    np.testing.assert_array_equal(encoder.encode_query(TEXTS), plain)
    np.testing.assert_array_equal(encoder.encode_document(TEXTS), plain)
    one = encoder.encode_query(TEXTS[0], convert_to_tensor=True, normalize_embeddings=True)
    assert isinstance(one, torch.Tensor) and one.shape == (384,)


def test_static_models_match_sentence_transformers(minilm_path: Path, tmp_path: Path) -> None:
    """A static model saved with "query" and "passage" prompts (and sentence-transformers' empty
    "document" one): sentence-transformers' own
    encode_query / encode_document against the torch encoder and the numpy query encoder."""
    folder = _static_folder(minilm_path / "tokenizer.json", tmp_path / "static", normalize=True)
    reference = SentenceTransformer(str(folder), device="cpu")
    ours = munjang.load_encoder(folder, device="cpu")
    numpy_encoder = StaticQueryEncoder.load(folder)
    assert numpy_encoder is not None
    for side in ("encode_query", "encode_document"):
        want = getattr(reference, side)(TEXTS, convert_to_numpy=True)
        np.testing.assert_allclose(getattr(ours, side)(TEXTS), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(getattr(numpy_encoder, side)(TEXTS), want, rtol=1e-5, atol=1e-6)
    # sentence-transformers saves an empty "document" prompt beside the given ones: it comes first
    assert ours.prompts["document"] == ""
    np.testing.assert_allclose(ours.encode_document(TEXTS), ours.encode(TEXTS), rtol=1e-6, atol=1e-7)
    query = ours.encode(TEXTS, prompt="query: ")
    np.testing.assert_allclose(ours.encode_query(TEXTS), query, rtol=1e-6, atol=1e-7)
    assert not np.allclose(ours.encode_query(TEXTS), ours.encode(TEXTS), atol=1e-4)


def test_a_transformer_encoder_picks_its_side_prompts(tmp_path: Path) -> None:
    encoder = munjang.load_encoder(tiny_bert(tmp_path / "bert", dropout=0.0), device="cpu")
    encoder.prompts = {"query": "query: ", "passage": "passage: ", "document": "document: "}
    q, d = encoder.encode(TEXTS, prompt="query: "), encoder.encode(TEXTS, prompt="document: ")
    np.testing.assert_allclose(encoder.encode_query(TEXTS), q, atol=1e-6)
    np.testing.assert_allclose(encoder.encode_document(TEXTS), d, atol=1e-6)  # "document" first
    np.testing.assert_allclose(
        encoder.encode_document(TEXTS, prompt_name="passage"),
        encoder.encode(TEXTS, prompt="passage: "),
        atol=1e-6,
    )
    encoder.prompts, encoder.default_prompt_name = {"instruct": "instruct: "}, "instruct"
    default = encoder.encode(TEXTS)  # no side prompt: the default prompt, as `encode`
    np.testing.assert_allclose(encoder.encode_query(TEXTS), default, atol=1e-6)
    np.testing.assert_allclose(encoder.encode_document(TEXTS, prompt=""), encoder.encode(TEXTS, prompt=""))


def test_m3_encodes_both_sides_alike(tmp_path: Path) -> None:
    model = load_m3_encoder(tiny_m3(tmp_path / "m3"), device="cpu")
    plain = model.encode(TEXTS, sparse=False)
    for side in (model.encode_query(TEXTS, sparse=False), model.encode_document(TEXTS, sparse=False)):
        np.testing.assert_allclose(side.dense, plain.dense, atol=1e-6)
        for a, b in zip(side.colbert or [], plain.colbert or [], strict=True):
            np.testing.assert_allclose(a, b, atol=1e-6)


def test_a_remote_encoder_sends_the_side_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[list[str]] = []

    def vectors(self: Any, inputs: list[str], *args: Any) -> np.ndarray:
        sent.append(list(inputs))
        return np.ones((len(inputs), 4), dtype=np.float32)

    monkeypatch.setattr(RemoteEncoder, "_vectors", vectors)
    model = RemoteEncoder(
        "remote:http://127.0.0.1:9#e5", cache=False, prompts={"query": "query: ", "passage": "passage: "}
    )
    model.encode_query(TEXTS[:1])
    model.encode_document(TEXTS[:1])
    model.encode_document(TEXTS[:1], prompt="")
    model.encode(TEXTS[:1])
    assert sent == [[f"query: {TEXTS[0]}"], [f"passage: {TEXTS[0]}"], [TEXTS[0]], [TEXTS[0]]]
    model.close()
