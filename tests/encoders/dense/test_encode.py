"""encode(): shapes, order, batching, prompts, truncation, output kinds, threads, bad input."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

import munjang
from munjang import InputTooLongError, SentenceEncoder

TEXTS = [
    "한 남자가 음식을 먹고 있다.",
    "A man is eating food.",
    "A man is eating a piece of bread while sitting on a long wooden bench in the park.",
    "고양이가 소파 위에서 자고 있다.",
    "Short.",
    "오늘 서울의 날씨는 맑고 따뜻하며, 오후에는 한강 공원에 산책하는 사람들이 많을 것으로 예상된다.",
    "",
]


def test_list_gives_matrix_single_gives_vector(encoder: SentenceEncoder) -> None:
    matrix = encoder.encode(TEXTS)
    assert matrix.shape == (len(TEXTS), 384) and matrix.dtype == np.float32
    vector = encoder.encode(TEXTS[1])
    assert vector.shape == (384,)
    np.testing.assert_allclose(vector, matrix[1], atol=1e-6)


def test_empty_list_and_empty_string(encoder: SentenceEncoder) -> None:
    assert encoder.encode([]).shape == (0, 384)
    assert encoder.encode([], convert_to_tensor=True).shape == (0, 384)
    empty = encoder.encode("")
    assert np.isfinite(empty).all() and np.linalg.norm(empty) == pytest.approx(1.0, abs=1e-5)


def test_non_string_names_its_index(encoder: SentenceEncoder) -> None:
    with pytest.raises(TypeError, match=r"sentences\[2\] is int"):
        encoder.encode(["a", "b", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"sentences\[0\] is NoneType"):
        encoder.encode([None])  # type: ignore[list-item]


def test_length_sorting_keeps_input_order_and_batch_size_does_not_matter(encoder: SentenceEncoder) -> None:
    one_by_one = np.stack([encoder.encode(t) for t in TEXTS])
    for batch_size in (1, 3, 64):
        np.testing.assert_allclose(encoder.encode(TEXTS, batch_size=batch_size), one_by_one, atol=1e-5)


def test_tensor_output_and_normalize(minilm_path) -> None:
    raw = munjang.load_encoder(minilm_path, device="cpu", pooling="cls")
    raw = SentenceEncoder(list(raw)[:2], device="cpu")  # no Normalize module
    assert not raw.normalizes
    out = raw.encode(TEXTS, convert_to_tensor=True)
    assert isinstance(out, torch.Tensor) and out.shape == (len(TEXTS), 384)
    norms = np.linalg.norm(raw.encode(TEXTS), axis=1)
    assert np.abs(norms - 1).max() > 0.1  # really unnormalized
    unit = raw.encode(TEXTS, normalize_embeddings=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, atol=1e-5)


def test_truncate_dim_keeps_a_prefix(encoder: SentenceEncoder) -> None:
    full = encoder.encode(TEXTS)
    short = encoder.encode(TEXTS, truncate_dim=64)
    assert short.shape == (len(TEXTS), 64)
    np.testing.assert_allclose(short, full[:, :64], atol=1e-6)
    renormed = encoder.encode(TEXTS, truncate_dim=64, normalize_embeddings=True)
    np.testing.assert_allclose(np.linalg.norm(renormed, axis=1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match="truncate_dim"):
        encoder.encode(TEXTS, truncate_dim=1000)


def test_literal_and_named_prompts(encoder: SentenceEncoder) -> None:
    literal = encoder.encode(TEXTS[:3], prompt="query: ")
    by_hand = encoder.encode(["query: " + t for t in TEXTS[:3]])
    np.testing.assert_allclose(literal, by_hand, atol=1e-6)
    with pytest.raises(ValueError, match="unknown prompt name 'query'"):
        encoder.encode(TEXTS[:1], prompt_name="query")


def test_e5_named_prompts_and_default(e5_path) -> None:
    e5 = munjang.load_encoder(e5_path, device="cpu")
    assert e5.prompts == {"query": "query: ", "passage": "passage: "}
    query = e5.encode(["서울의 날씨"], prompt_name="query")
    np.testing.assert_allclose(query, e5.encode(["query: 서울의 날씨"]), atol=1e-6)
    e5.default_prompt_name = "passage"
    np.testing.assert_allclose(e5.encode(["서울"]), e5.encode(["passage: 서울"], prompt=""), atol=1e-6)


def test_truncation_at_max_length_and_refusal_when_off(encoder: SentenceEncoder) -> None:
    long_text = "word " * 1000
    assert len(encoder.transformer.tokenize([long_text])["input_ids"][0]) == encoder.max_seq_length == 256
    truncated = encoder.encode(long_text)
    np.testing.assert_allclose(truncated, encoder.encode(" ".join(["word"] * 254)), atol=1e-5)
    with pytest.raises(
        InputTooLongError, match=r"sentences\[1\] has 1002 tokens, over the model's limit of 256"
    ):
        encoder.encode(["fine", long_text], truncate=False)
    assert encoder.encode(["fine"], truncate=False).shape == (1, 384)


def test_max_seq_length_can_be_lowered_not_raised_past_the_model(minilm_path) -> None:
    enc = munjang.load_encoder(minilm_path, device="cpu")
    enc.max_seq_length = 8
    assert (
        len(enc.transformer.tokenize(["one two three four five six seven eight nine"])["input_ids"][0]) == 8
    )
    with pytest.raises(ValueError, match="limit 512"):
        enc.max_seq_length = 4096


def test_token_embeddings_without_padding(encoder: SentenceEncoder) -> None:
    tokens = encoder.encode(TEXTS, output_value="token_embeddings")
    ids = encoder.transformer.tokenize(TEXTS)["input_ids"]
    assert [t.shape for t in tokens] == [(len(i), 384) for i in ids]
    # Mean of the unpadded token vectors, normalized, is the sentence embedding.
    means = np.stack([t.mean(axis=0) for t in tokens])
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    np.testing.assert_allclose(means, encoder.encode(TEXTS), atol=1e-5)


def test_safe_from_several_threads(encoder: SentenceEncoder) -> None:
    chunks = [TEXTS[i:] + TEXTS[:i] for i in range(len(TEXTS))] * 3
    expected = [encoder.encode(c, batch_size=2) for c in chunks]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda c: encoder.encode(c, batch_size=2), chunks))
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, atol=1e-5)


def test_devices(encoder: SentenceEncoder) -> None:
    assert str(encoder.device) == "cpu"
    assert encoder.encode("x", device="cpu").shape == (384,)
    with pytest.raises(ValueError, match="unknown device"):
        munjang.load_encoder(device="tpu-ish")


def test_best_device_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """cuda, then mps, then cpu: each branch forced, so the test says something on a CPU machine."""
    from munjang._util.devices import best_device, resolve_device

    class Backend:
        def __init__(self, present: bool) -> None:
            self.present = present

        def is_available(self) -> bool:
            return self.present

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert best_device() == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends, "mps", Backend(True), raising=False)
    assert best_device() == "mps"
    monkeypatch.setattr(torch.backends, "mps", Backend(False), raising=False)
    assert best_device() == "cpu" and resolve_device("auto") == torch.device("cpu")


def test_bad_arguments(encoder: SentenceEncoder) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        encoder.encode(TEXTS, batch_size=0)
    with pytest.raises(ValueError, match="output_value"):
        encoder.encode(TEXTS, output_value="logits")  # type: ignore[arg-type]


def test_describe(encoder: SentenceEncoder) -> None:
    info = encoder.describe()
    assert info["architecture"] == "BertModel" and info["layers"] == 6
    assert info["embedding_dimension"] == 384 and info["max_seq_length"] == 256
    assert info["pooling"] == "mean" and info["normalize"] is True
    assert info["parameters"] == sum(p.numel() for p in encoder.parameters())
