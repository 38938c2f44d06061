"""OpenVINO's pipelined path: several batches in flight on throughput streams, results in input order,
equal to the one-batch-at-a-time latency path, and nothing left running when a caller stops early."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import munjang

pytest.importorskip("openvino")

from munjang.inference.base import PipelinedBackend, map_token_embeddings
from munjang.inference.openvino_backend import MIN_BATCHES_PER_STREAM, OpenVinoBackend

TEXTS = [
    "A man is playing a guitar on the stage.",
    "The quick brown fox jumps over the lazy dog.",
    "Stocks fell sharply on Monday after the central bank raised interest rates by half a point.",
    "Hi",
    "Two children are building a sandcastle at the beach while their parents watch.",
    "How do I reset my password?",
    "오늘 날씨가 정말 좋네요.",
    "The committee will publish its findings next spring.",
    "A woman slices an onion.",
    "서울의 지하철은 아침마다 붐빈다.",
    "The recipe calls for two cups of flour and a pinch of salt.",
    "No.",
]


@pytest.fixture(scope="module", autouse=True)
def cache(isolated_cache: Path) -> Path:
    return isolated_cache


@pytest.fixture(scope="module")
def encoder() -> munjang.SentenceEncoder:
    return munjang.load_encoder(None, device="cpu")


@pytest.fixture(scope="module")
def backend(encoder: munjang.SentenceEncoder) -> OpenVinoBackend:
    return OpenVinoBackend(encoder.transformer, precision="fp32", threads=2)


def batches(encoder: munjang.SentenceEncoder, size: int) -> list[tuple[int, dict[str, torch.Tensor]]]:
    """(index, padded batch) of TEXTS in consecutive slices of `size`."""
    transformer = encoder.transformer
    encoded = transformer.tokenize(TEXTS)
    return [
        (i, transformer.collate(encoded, list(range(start, min(start + size, len(TEXTS))))))
        for i, start in enumerate(range(0, len(TEXTS), size))
    ]


def test_openvino_is_pipelined_with_a_stream_per_thread(backend: OpenVinoBackend) -> None:
    assert isinstance(backend, PipelinedBackend)
    assert backend.streams == 2


def test_streams_return_every_batch_in_order_and_equal_to_one_at_a_time(encoder, backend) -> None:
    items = batches(encoder, 2)  # 6 batches: enough for the throughput model
    assert len(items) >= MIN_BATCHES_PER_STREAM * backend.streams
    got = list(backend.token_embeddings_many(iter(items)))
    assert [key for key, _, _ in got] == [key for key, _ in items]
    assert ("THROUGHPUT", False) in backend._models
    for (_, batch, tokens), (_, original) in zip(got, items, strict=True):
        assert batch is original
        expected = backend.token_embeddings(batch)
        assert tokens.shape == expected.shape and tokens.dtype == torch.float32
        mask = batch["attention_mask"].bool()
        torch.testing.assert_close(tokens[mask], expected[mask], atol=1e-5, rtol=1e-5)


def test_few_batches_take_the_latency_model(encoder) -> None:
    fresh = OpenVinoBackend(encoder.transformer, precision="fp32", threads=2)
    items = batches(encoder, len(TEXTS) // 2)  # 2 batches: fewer than two per stream
    got = list(fresh.token_embeddings_many(items))
    assert [key for key, _, _ in got] == [0, 1]
    assert ("THROUGHPUT", False) not in fresh._models


def test_one_thread_never_compiles_a_throughput_model(encoder) -> None:
    single = OpenVinoBackend(encoder.transformer, precision="fp32", threads=1)
    assert single.streams == 1
    got = list(single.token_embeddings_many(batches(encoder, 1)))
    assert len(got) == len(TEXTS) and ("THROUGHPUT", False) not in single._models


def test_an_empty_batch_keeps_its_place(encoder, backend) -> None:
    items = batches(encoder, 2)
    empty = {k: v[:0] for k, v in items[0][1].items()}
    items.insert(3, ("empty", empty))
    got = list(backend.token_embeddings_many(items))
    assert [key for key, _, _ in got] == [key for key, _ in items]
    assert got[3][2].shape == (0, empty["input_ids"].shape[1], 384)


def test_a_caller_that_stops_early_leaves_nothing_running(encoder, backend) -> None:
    items = batches(encoder, 1)
    stream = backend.token_embeddings_many(items)
    first = next(stream)
    assert first[0] == 0
    stream.close()  # the remaining requests are cancelled and waited for
    again = list(backend.token_embeddings_many(items))
    assert [key for key, _, _ in again] == list(range(len(TEXTS)))


def test_map_token_embeddings_runs_a_plain_backend_one_batch_at_a_time(encoder) -> None:
    plain = encoder.backend("torch", "fp32")
    assert not isinstance(plain, PipelinedBackend)
    items = batches(encoder, 3)
    got = list(map_token_embeddings(plain, items))
    assert [key for key, _, _ in got] == [key for key, _ in items]


def test_encode_through_streams_matches_torch_in_input_order(encoder) -> None:
    encoder.set_backend("openvino", "fp32", threads=2)
    try:
        texts = TEXTS * 5
        streamed = encoder.encode(texts, batch_size=2)  # 30 batches on the throughput model
        assert ("THROUGHPUT", False) in encoder.backend()._models
        reference = encoder.encode(texts, backend="torch", precision="fp32")
        np.testing.assert_allclose(streamed, reference, atol=1e-4)
        whole = encoder.encode(texts)  # a single batch on the latency model
        np.testing.assert_allclose(streamed, whole, atol=1e-5)
    finally:
        encoder.set_backend("torch", "fp32")


def test_warmup_builds_the_throughput_model_for_the_chosen_options(encoder) -> None:
    encoder.set_backend("openvino", "fp32", threads=3)
    try:
        backend = encoder.backend()
        assert isinstance(backend, OpenVinoBackend) and backend.threads == 3
        assert ("THROUGHPUT", False) not in backend._models
        encoder.warmup()
        assert ("THROUGHPUT", False) in backend._models
        assert backend.streams == backend._throughput_model().get_property("NUM_STREAMS") >= 1
        encoder.set_backend("openvino", "fp32", threads=2)
        assert encoder.backend() is not backend  # other options, another backend object
    finally:
        encoder.set_backend("torch", "fp32")


def test_an_input_stream_that_fails_midway_raises_and_leaves_the_backend_usable(encoder, backend) -> None:
    items = batches(encoder, 1)

    def failing():
        yield from items[:6]
        raise ValueError("the caller's data ran out")

    with pytest.raises(ValueError, match="ran out"):
        list(backend.token_embeddings_many(failing()))
    again = list(backend.token_embeddings_many(items))
    assert [key for key, _, _ in again] == list(range(len(TEXTS)))


def test_two_interleaved_calls_on_one_thread_do_not_share_requests(encoder, backend) -> None:
    items = batches(encoder, 1)
    first, second = backend.token_embeddings_many(items), backend.token_embeddings_many(items)
    got_first, got_second = [], []
    for a, b in zip(first, second, strict=True):  # both generators suspended with requests in flight
        got_first.append(a)
        got_second.append(b)
    assert [key for key, _, _ in got_first] == [key for key, _, _ in got_second] == list(range(len(TEXTS)))
    for (_, batch, x), (_, _, y) in zip(got_first, got_second, strict=True):
        mask = batch["attention_mask"].bool()
        torch.testing.assert_close(x[mask], y[mask])


def test_long_and_short_batches_run_on_their_own_graphs_in_input_order(encoder, monkeypatch) -> None:
    from munjang.inference import openvino_backend

    fresh = OpenVinoBackend(encoder.transformer, precision="fp32", threads=2)
    items = batches(encoder, 1)
    widths = [batch["input_ids"].shape[1] for _, batch in items]
    threshold = sorted(widths)[len(widths) // 2]  # about half the batches count as long
    monkeypatch.setattr(openvino_backend, "LONG_BATCH_TOKENS", threshold)
    got = list(fresh.token_embeddings_many(items))
    assert [key for key, _, _ in got] == [key for key, _ in items]
    assert {("THROUGHPUT", False), ("THROUGHPUT", True)} <= set(fresh._models)
    reference = OpenVinoBackend(encoder.transformer, precision="fp32", threads=1)  # one graph, no streams
    for _, batch, tokens in got:
        mask = batch["attention_mask"].bool()
        expected = reference.token_embeddings(batch)
        torch.testing.assert_close(tokens[mask], expected[mask], atol=1e-4, rtol=1e-4)
        single = fresh.token_embeddings(batch)  # the latency graph of the batch's kind
        torch.testing.assert_close(single[mask], expected[mask], atol=1e-4, rtol=1e-4)
    assert ("LATENCY", True) in fresh._models and ("LATENCY", False) in fresh._models
    assert max(widths) >= threshold > min(widths)
