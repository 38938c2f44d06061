"""Dynamic batching: concurrent requests share model batches, results match a direct encode, a huge
request cannot starve small ones, and one bad request fails alone."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from munjang.errors import InputTooLongError
from munjang.server.batcher import DynamicBatcher
from tests.helpers.server import LOCAL

TEXTS = [f"request {i}: the weather in Seoul is {'sunny' if i % 2 else '흐림'} today" for i in range(64)]


def test_concurrent_requests_are_merged_and_match_a_direct_encode(encoder):
    batcher = DynamicBatcher(encoder, max_tokens=4096, max_wait_ms=20)
    try:
        expected = encoder.encode(TEXTS)
        results: dict[int, np.ndarray] = {}
        barrier = threading.Barrier(8)

        def client(k: int) -> None:
            barrier.wait()
            results[k] = batcher.encode(TEXTS[k * 8 : (k + 1) * 8])

        threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        np.testing.assert_allclose(np.concatenate([results[k] for k in range(8)]), expected, atol=1e-5)
        assert batcher.stats.requests == 8
        assert batcher.stats.batches < 8, "concurrent requests should share batches"
        assert batcher.stats.rows == len(TEXTS)
        assert batcher.encode([]).shape == (0, encoder.get_embedding_dimension())
    finally:
        batcher.close()


def test_options_are_kept_apart(encoder):
    batcher = DynamicBatcher(encoder, max_wait_ms=20)
    try:
        a = batcher.submit(TEXTS[:4], truncate_dim=8, normalize_embeddings=True)
        b = batcher.submit(TEXTS[:4])
        np.testing.assert_allclose(b.result(), encoder.encode(TEXTS[:4]), atol=1e-5)
        short = a.result()
        assert short.shape == (4, 8)
        np.testing.assert_allclose(np.linalg.norm(short, axis=1), 1.0, atol=1e-5)
    finally:
        batcher.close()


def test_a_huge_request_does_not_starve_small_ones(encoder):
    batcher = DynamicBatcher(encoder, max_tokens=512, max_wait_ms=1, slice_rows=16)
    try:
        huge = batcher.submit([f"{t} and some more words to make it longer" for t in TEXTS * 12])
        time.sleep(0.05)
        small = batcher.submit(["a short question"])
        small.result(timeout=60)
        assert not huge.done(), "the small request should finish while the huge one is still running"
        assert huge.result(timeout=300).shape == (len(TEXTS) * 12, encoder.get_embedding_dimension())
    finally:
        batcher.close()


def test_an_over_long_input_is_refused_on_arrival(encoder):
    batcher = DynamicBatcher(encoder, max_wait_ms=1)
    try:
        with pytest.raises(InputTooLongError, match=r"texts\[1\]"):
            batcher.submit(["fine", "word " * 600], truncate=False)
        assert batcher.stats.requests == 0
    finally:
        batcher.close()


def test_a_failing_request_fails_alone(encoder):
    batcher = DynamicBatcher(encoder, max_wait_ms=30)
    try:
        ids, _ = encoder.token_ids(["word " * 600], truncate=False)  # past the limit: fails in the model call
        bad = batcher.submit_tokenized(ids)
        good = batcher.submit(["fine"], truncate=False)
        with pytest.raises(ValueError, match="input_ids"):
            bad.result(timeout=60)
        np.testing.assert_allclose(good.result(timeout=60), encoder.encode(["fine"]), atol=1e-5)
    finally:
        batcher.close()
    with pytest.raises(RuntimeError, match="closed"):
        batcher.submit(["late"])


def test_tokenized_submissions_match_encode_with_prompts(encoder):
    batcher = DynamicBatcher(encoder, max_wait_ms=1)
    try:
        encoder.prompts["query"] = "query: "
        got = batcher.encode(TEXTS[:6], prompt_name="query", normalize_embeddings=True, truncate_dim=16)
        want = encoder.encode(TEXTS[:6], prompt_name="query", normalize_embeddings=True, truncate_dim=16)
        np.testing.assert_allclose(got, want, atol=1e-5)
    finally:
        encoder.prompts.pop("query", None)
        batcher.close()


def test_metrics_count_requests_batches_and_queue(encoder):
    from fastapi.testclient import TestClient

    from munjang.server import ServerSettings, create_app

    app = create_app(ServerSettings(models={"mini": encoder}, api_key="k"))
    with TestClient(app, base_url=LOCAL) as client:
        headers = {"Authorization": "Bearer k"}
        assert client.post("/v1/embeddings", json={"input": ["a", "b"]}, headers=headers).status_code == 200
        assert client.post("/v1/embeddings", json={"input": ""}, headers=headers).status_code == 400
        text = client.get("/metrics").text  # open, like /health
    assert 'munjang_requests_total{route="/v1/embeddings",status="200"} 1.0' in text
    assert 'munjang_requests_total{route="/v1/embeddings",status="400"} 1.0' in text
    assert 'munjang_batch_rows_count{model="mini"} 1.0' in text
    assert 'munjang_batch_rows_sum{model="mini"} 2.0' in text
    assert 'munjang_queue_depth{model="mini"} 0.0' in text
    assert 'munjang_request_seconds_bucket{le="30.0",route="/v1/embeddings"} 2.0' in text


def test_batches_computed_side_by_side_come_back_in_row_order(encoder):
    """Two compute threads, the first slower: slices of one request finish out of order, and the
    request still gets its rows in order."""
    calls: list[int] = []

    def slow(encoded, **options):
        calls.append(0)
        time.sleep(0.3)
        return encoder.encode_tokenized(encoded, **options)

    def fast(encoded, **options):
        calls.append(1)
        return encoder.encode_tokenized(encoded, **options)

    batcher = DynamicBatcher(encoder, max_tokens=64, max_wait_ms=1, slice_rows=4, compute=[slow, fast])
    try:
        texts = [f"{t} and a tail of {i} more words" for i, t in enumerate(TEXTS[:24])]
        got = batcher.submit(texts).result(timeout=120)
        np.testing.assert_allclose(got, encoder.encode(texts), atol=1e-5)
        assert set(calls) == {0, 1}, "both compute threads should have taken batches"
        assert batcher.stats.rows == len(texts)
    finally:
        batcher.close()
    with pytest.raises(ValueError, match="at least one"):
        DynamicBatcher(encoder, compute=[])
