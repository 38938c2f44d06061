"""The torch inference path: token-budget batching, chunked tokenization, the lean BERT forward
(fp32 exact, bf16 within cosine tolerance) and backend selection on the encoder."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from transformers import (
    BertConfig,
    BertModel,
    DistilBertConfig,
    DistilBertModel,
    XLMRobertaConfig,
    XLMRobertaModel,
)

import munjang
from munjang.encoders.dense import backend_selection as backend_module
from munjang.encoders.dense import encoder as encoder_module
from munjang.errors import InputTooLongError
from munjang.inference import hardware
from munjang.inference.batching import padding_fraction, prepared_chunks, token_budget_batches
from munjang.inference.torch_backend import HuggingFaceBackend, LeanBertBackend, torch_backend

SENTENCES = [
    "A man is playing a guitar.",
    "Two dogs run across the snowy field while children watch from the porch.",
    "Hi",
    "서울의 날씨가 오늘은 맑고 따뜻합니다.",
    "The committee postponed its decision on the new budget until next month, citing incomplete data.",
    "고양이가 소파 위에서 잠을 잔다.",
    "",
    "Stocks fell sharply.",
]


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


# -- batching ------------------------------------------------------------------------------------
@pytest.mark.parametrize("max_tokens,max_rows", [(None, None), (64, None), (None, 3), (40, 4), (5, 100)])
def test_token_budget_batches_cover_every_row_once_within_limits(max_tokens, max_rows):
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 30, size=101)
    batches = token_budget_batches(lengths, max_tokens, max_rows)
    seen = np.concatenate(batches)
    assert sorted(seen.tolist()) == list(range(len(lengths)))
    assert (np.diff(lengths[seen]) <= 0).all(), "longest first"
    for b in batches:
        if max_rows is not None:
            assert len(b) <= max_rows
        if max_tokens is not None and len(b) > 1:
            assert len(b) * lengths[b].max() <= max_tokens


def test_token_budget_gives_an_overlong_row_its_own_batch_and_rejects_bad_limits():
    assert [b.tolist() for b in token_budget_batches([50, 3, 3], max_tokens=10)] == [[0], [1, 2]]
    with pytest.raises(ValueError, match="max_tokens"):
        token_budget_batches([1], max_tokens=0)
    with pytest.raises(ValueError, match="batch_size"):
        token_budget_batches([1], max_rows=0)
    assert token_budget_batches([], 10) == []


def test_sorted_token_budget_wastes_less_padding_than_input_order():
    rng = np.random.default_rng(1)
    lengths = rng.integers(3, 60, size=2000)
    unsorted = [np.arange(i, min(i + 32, 2000)) for i in range(0, 2000, 32)]
    budget = token_budget_batches(lengths, max_tokens=2048)
    assert padding_fraction(lengths, budget) < 0.05 < padding_fraction(lengths, unsorted)


def brute_force_cost(sorted_lengths: list[int], max_tokens: int, max_rows: int, batch_cost: int) -> float:
    """Least padded tokens + batch_cost per batch over every cut of the sorted lengths."""

    @functools.cache
    def best(start: int) -> float:
        if start == len(sorted_lengths):
            return 0.0
        costs = []
        for stop in range(start + 1, len(sorted_lengths) + 1):
            rows, padded = stop - start, (stop - start) * sorted_lengths[start]
            if rows > max_rows or (padded > max_tokens and rows > 1):
                break
            costs.append(padded + batch_cost + best(stop))
        return min(costs)

    return best(0)


@pytest.mark.parametrize("seed", range(6))
def test_token_budget_cuts_are_optimal_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 40, size=14)
    max_tokens, max_rows, cost = (
        int(rng.integers(30, 200)),
        int(rng.integers(2, 10)),
        int(rng.integers(0, 40)),
    )
    batches = token_budget_batches(lengths, max_tokens, max_rows, batch_cost=cost)
    got = sum(len(b) * lengths[b].max() + cost for b in batches)
    ordered = sorted(lengths.tolist(), reverse=True)
    assert got == brute_force_cost(ordered, max_tokens, max_rows, cost)


def test_token_budget_splits_a_mixed_pool_with_less_padding_than_a_greedy_fill():
    rng = np.random.default_rng(2)
    lengths = rng.integers(8, 64, size=128)  # one server batch of unrelated requests
    order = np.argsort(-lengths, kind="stable")
    greedy, start = [], 0
    while start < len(order):
        rows = max(1, 2048 // int(lengths[order[start]]))
        greedy.append(order[start : start + rows])
        start += rows
    chosen = token_budget_batches(lengths, 2048, 256)
    assert padding_fraction(lengths, chosen) < padding_fraction(lengths, greedy) / 3


def test_prepared_chunks_keep_order_and_raise_errors():
    chunks = list(prepared_chunks(10, 3, lambda a, b: list(range(a, b))))
    assert [(c.start, c.stop) for c in chunks] == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert [v for c in chunks for v in c.value] == list(range(10))
    assert list(prepared_chunks(0, 3, lambda a, b: None)) == []

    def failing(a: int, b: int) -> int:
        if a >= 3:
            raise RuntimeError(f"bad chunk at {a}")
        return a

    with pytest.raises(RuntimeError, match="bad chunk at 3"):
        list(prepared_chunks(9, 3, failing))


# -- the lean forward ----------------------------------------------------------------------------
def _batch(enc, texts):
    return enc.transformer.collate(enc.transformer.tokenize(texts), range(len(texts)))


def test_lean_fp32_matches_the_hugging_face_forward(encoder):
    batch = _batch(encoder, SENTENCES)
    mask = batch["attention_mask"].bool()
    with torch.inference_mode():
        reference = encoder.transformer(dict(batch))["token_embeddings"]
    lean = LeanBertBackend(encoder.transformer.auto_model, "fp32").token_embeddings(batch)
    assert lean.dtype == torch.float32 and lean.shape == reference.shape
    assert (lean[mask] - reference[mask]).abs().max() < 1e-5


@pytest.mark.parametrize("fused_from", [0, 10**9], ids=["fused-attention", "two-matmuls"])
def test_both_cpu_attention_paths_match_the_hugging_face_forward(encoder, monkeypatch, fused_from):
    """Batches at least CPU_FUSED_ATTENTION_TOKENS wide take torch's fused kernel, narrower ones two
    matmuls: each path on its own (the threshold forced) gives the reference numbers, and in bf16 stays
    within the fp32 bar."""
    from munjang.inference import torch_backend

    monkeypatch.setattr(torch_backend, "CPU_FUSED_ATTENTION_TOKENS", fused_from)
    batch = _batch(encoder, SENTENCES)
    mask = batch["attention_mask"].bool()
    assert not bool(mask.all()), "the batch must pad, so the mask is exercised"
    with torch.inference_mode():
        reference = encoder.transformer(dict(batch))["token_embeddings"]
    model = encoder.transformer.auto_model
    lean = LeanBertBackend(model, "fp32").token_embeddings(batch)
    assert (lean[mask] - reference[mask]).abs().max() < 1e-5
    half = LeanBertBackend(model, "bf16").token_embeddings(batch)
    weights = mask[..., None].float()
    pooled = [(t * weights).sum(1) / weights.sum(1) for t in (half, reference)]
    assert torch.nn.functional.cosine_similarity(*pooled).min() >= 0.9995


@pytest.mark.parametrize("kind", ["bert", "xlm-roberta"])
def test_lean_fp32_matches_other_bert_family_models(kind):
    torch.manual_seed(0)
    common = dict(
        vocab_size=120,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    if kind == "bert":
        model = BertModel(BertConfig(**common, type_vocab_size=2, hidden_act="gelu_new"))
    else:
        model = XLMRobertaModel(XLMRobertaConfig(**common, type_vocab_size=1, pad_token_id=1))
    model.eval()
    ids = torch.randint(5, 120, (3, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    mask[2, 2:] = 0
    pad = int(model.config.pad_token_id or 0)
    ids = ids.masked_fill(mask == 0, pad)
    batch = {"input_ids": ids, "attention_mask": mask}
    if kind == "bert":
        batch["token_type_ids"] = torch.zeros_like(ids).masked_fill(torch.arange(9) > 4, 1) * mask
    with torch.inference_mode():
        reference = model(**batch).last_hidden_state
    lean = LeanBertBackend(model, "fp32").token_embeddings(batch)
    real = mask.bool()
    assert (lean[real] - reference[real]).abs().max() < 1e-5


def test_unsupported_architectures_fall_back_to_hugging_face():
    model = DistilBertModel(
        DistilBertConfig(
            vocab_size=50, dim=16, n_layers=1, n_heads=2, hidden_dim=32, max_position_embeddings=16
        )
    )
    assert isinstance(torch_backend(model, "fp32"), HuggingFaceBackend)
    with pytest.raises(munjang.inference.BackendError, match="model type 'distilbert'"):
        LeanBertBackend(model, "fp32")


def test_lean_weights_follow_in_place_parameter_updates(minilm_path):
    enc = munjang.load_encoder(minilm_path, device="cpu")
    batch = _batch(enc, SENTENCES[:3])
    lean = enc.backend("torch", "bf16")
    before = lean.token_embeddings(batch)
    with torch.no_grad():
        enc.transformer.auto_model.encoder.layer[0].intermediate.dense.weight.mul_(1.5)
    after = lean.token_embeddings(batch)
    with torch.inference_mode():
        reference = enc.transformer(dict(batch))["token_embeddings"]
    real = batch["attention_mask"].bool()
    assert (after[real] - before[real]).abs().max() > 1e-2
    cos = torch.nn.functional.cosine_similarity(after[real], reference[real], dim=-1)
    assert cos.min() > 0.99


@pytest.mark.parametrize("fused", [True, False])
def test_encode_sees_weights_an_optimizer_stepped(minilm_path, fused):
    """A fused AdamW (the trainer's) writes the weights without bumping torch's version counters; the
    lean path must still drop the fused copy it built before the step."""
    enc = munjang.load_encoder(minilm_path, device="cpu")
    first = enc.encode(SENTENCES[:3])  # builds the lean weights
    optimizer = torch.optim.AdamW(enc.parameters(), lr=1e-2, fused=fused)
    features = enc.tokenize(SENTENCES[:3])
    enc.train()
    enc(features)["sentence_embedding"].sum().backward()
    optimizer.step()
    stepped = enc.encode(SENTENCES[:3])
    fresh = munjang.load_encoder(minilm_path, device="cpu")
    fresh.load_state_dict(enc.state_dict())
    assert np.abs(stepped - first).max() > 1e-3
    np.testing.assert_allclose(stepped, fresh.encode(SENTENCES[:3]), atol=1e-5)


def test_exported_backends_are_rebuilt_only_after_their_weights_were_stepped(minilm_path, monkeypatch):
    built = []

    def fake_build(name, precision, transformer, folder, options):
        built.append(name)
        return object()

    monkeypatch.setattr(backend_module, "build_backend", fake_build)
    enc = munjang.load_encoder(minilm_path, device="cpu")
    other = torch.nn.Linear(2, 2)
    first = enc.backend("onnx", "fp32")
    torch.optim.SGD(other.parameters(), lr=0.1).step()  # another model's step: nothing to rebuild
    assert enc.backend("onnx", "fp32") is first
    weight = enc.transformer.auto_model.encoder.layer[0].output.dense.weight
    weight.grad = torch.ones_like(weight)
    torch.optim.AdamW([weight], lr=0.1, fused=True).step()
    rebuilt = enc.backend("onnx", "fp32")
    assert rebuilt is not first and built == ["onnx", "onnx"]
    assert enc.backend("onnx", "fp32") is rebuilt


# -- precision and encoder integration -----------------------------------------------------------
def test_bf16_keeps_fp32_accuracy(encoder):
    texts = SENTENCES * 8
    fp32 = encoder.encode(texts, precision="fp32")
    bf16 = encoder.encode(texts, precision="bf16")
    cos = cosine_rows(fp32, bf16)
    assert cos.mean() >= 0.9995 and cos.min() >= 0.999


def test_hugging_face_bf16_autocast_path_also_agrees(encoder):
    texts = SENTENCES
    fp32 = encoder.encode(texts)
    auto = encoder.encode(texts, precision="bf16", backend="torch")
    backend = HuggingFaceBackend(encoder.transformer.auto_model, "bf16")
    batch = _batch(encoder, texts)
    tokens = backend.token_embeddings(batch)
    assert tokens.dtype == torch.float32
    assert cosine_rows(fp32, auto).min() > 0.999


def test_chunked_tokenization_gives_the_same_rows_in_the_same_order(encoder, monkeypatch):
    texts = [f"{s} {i}" for i, s in enumerate(SENTENCES * 3)]
    whole = encoder.encode(texts)
    monkeypatch.setattr(encoder_module, "TOKENIZE_CHUNK", 5)
    chunked = encoder.encode(texts)
    small_batches = encoder.encode(texts, max_tokens=16)
    np.testing.assert_allclose(chunked, whole, atol=1e-6)
    np.testing.assert_allclose(small_batches, whole, atol=1e-5)
    tokens = encoder.encode(texts, output_value="token_embeddings")
    assert len(tokens) == len(texts)
    assert tokens[2].shape[0] == len(encoder.transformer.tokenize([texts[2]])["input_ids"][0])


def test_too_long_input_is_named_by_its_global_index_across_chunks(encoder, monkeypatch):
    monkeypatch.setattr(encoder_module, "TOKENIZE_CHUNK", 4)
    texts = ["short"] * 9 + ["word " * 600]
    with pytest.raises(InputTooLongError, match=r"sentences\[9\] has \d+ tokens"):
        encoder.encode(texts, truncate=False)


def test_backend_choice_is_validated(encoder):
    with pytest.raises(ValueError, match="unknown backend 'tensorrt'"):
        encoder.encode("x", backend="tensorrt")
    with pytest.raises(ValueError, match="offers precision fp32, int8"):
        encoder.encode("x", backend="onnx", precision="bf16")
    with pytest.raises(ValueError, match="max_tokens"):
        encoder.encode("x", max_tokens=0)


def test_auto_precision_follows_the_cpu(monkeypatch, minilm_path):
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx512f", "avx512_bf16"}))
    enc = munjang.load_encoder(minilm_path, device="cpu", backend="torch", precision="auto")
    assert enc.precision == "bf16"
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2"}))
    enc.set_backend("torch", "auto")
    assert enc.precision == "fp32"


def test_warmup_builds_the_backend_once(minilm_path):
    enc = munjang.load_encoder(minilm_path, device="cpu", precision="bf16")
    enc.warmup()
    backend = enc.backend()
    assert isinstance(backend, LeanBertBackend) and backend._key is not None
    key = backend._key
    enc.encode(SENTENCES)
    assert enc.backend() is backend and backend._key == key


def test_fused_linear_gelu_agrees_with_the_two_op_form(encoder):
    backend = LeanBertBackend(encoder.transformer.auto_model, "bf16")
    if not backend._fused_gelu:  # the backend probed oneDNN's kernel, found it missing or wrong: not used
        pytest.skip("this CPU's oneDNN has no working bf16 linear + GELU kernel (no AVX-512): never fused")
    batch = _batch(encoder, SENTENCES)
    real = batch["attention_mask"].bool()
    backend._fused_gelu = False
    plain = backend.token_embeddings(batch)[real]
    backend._fused_gelu = True
    fused = backend.token_embeddings(batch)[real]
    assert torch.nn.functional.cosine_similarity(plain, fused, dim=-1).min() > 0.999
