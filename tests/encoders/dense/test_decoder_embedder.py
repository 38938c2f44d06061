"""Decoder embedders (Qwen3-Embedding's shape: last-token pooling, left padding, instruction prompts):
vectors equal sentence-transformers' to 1e-5, with and without instructions, both save directions."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

from munjang import load_encoder
from tests.helpers.llm import tiny_decoder_embedder

TEXTS = [
    "한 남자가 기타를 친다.",
    "서울은 한국의 수도이다. 부산은 항구 도시이다. " * 4,  # much longer: the batch is padded
    "A man is playing a guitar.",
    "cat",
    "아이들이 공원에서 뛰어논다.",
]
TASK = "Instruct: Given a Korean question, retrieve passages that answer it\nQuery: "

logging.getLogger("sentence_transformers").setLevel(logging.ERROR)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_decoder_embedder(tmp_path_factory.mktemp("qwen") / "emb")


@pytest.fixture(scope="module")
def theirs(folder: Path) -> SentenceTransformer:
    return SentenceTransformer(str(folder), device="cpu")


@pytest.mark.parametrize(
    "kwargs", [{}, {"prompt_name": "query"}, {"prompt_name": "document"}, {"prompt": TASK}]
)
def test_vectors_equal_sentence_transformers(folder: Path, theirs: SentenceTransformer, kwargs: dict) -> None:
    ours = load_encoder(folder, device="cpu")
    assert ours[1].modes == ("lasttoken",) and ours.prompts["query"].startswith("Instruct:")
    got = ours.encode(TEXTS, batch_size=5, **kwargs)  # one batch: short rows padded beside a long one
    expected = theirs.encode(TEXTS, batch_size=5, **kwargs)
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    one_by_one = np.stack([ours.encode(t, **kwargs) for t in TEXTS])
    np.testing.assert_allclose(one_by_one, expected, atol=1e-5, rtol=0)


def test_the_instruction_changes_the_query_vector(folder: Path) -> None:
    ours = load_encoder(folder, device="cpu")
    plain, instructed = ours.encode(TEXTS[:1]), ours.encode(TEXTS[:1], prompt=TASK)
    assert float(plain[0] @ instructed[0]) < 0.999


def test_sentence_transformers_loads_what_we_save(folder: Path, tmp_path: Path) -> None:
    ours = load_encoder(folder, device="cpu")
    ours.save(tmp_path / "saved")
    reloaded = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    for kwargs in ({}, {"prompt_name": "query"}, {"prompt": TASK}):
        np.testing.assert_allclose(ours.encode(TEXTS, **kwargs), reloaded.encode(TEXTS, **kwargs), atol=1e-5)
    again = load_encoder(tmp_path / "saved", device="cpu")
    np.testing.assert_allclose(again.encode(TEXTS), ours.encode(TEXTS), atol=1e-7)


def test_bf16_stays_close_to_fp32(folder: Path) -> None:
    ours = load_encoder(folder, device="cpu")
    fp32 = ours.encode(TEXTS, precision="fp32")
    bf16 = ours.encode(TEXTS, precision="bf16")
    cosines = np.sum(fp32 * bf16, axis=1)
    assert bf16.dtype == np.float32 and cosines.min() > 0.99, cosines
    assert torch.get_default_dtype() == torch.float32


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_exported_graphs_equal_sentence_transformers(
    folder: Path, theirs: SentenceTransformer, backend: str
) -> None:
    ours = load_encoder(folder, device="cpu")
    got = ours.encode(TEXTS, prompt_name="query", backend=backend, precision="fp32")
    np.testing.assert_allclose(got, theirs.encode(TEXTS, prompt_name="query"), atol=1e-5, rtol=0)
