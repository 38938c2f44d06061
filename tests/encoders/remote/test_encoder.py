"""RemoteEncoder against a live munjang server (a real OpenAI-compatible API): the same vectors and
evaluator scores as the local model, request limits, the disk cache, and the error paths (429 with
Retry-After and 5xx retried, 401/400 raised at once) through a fault-injecting proxy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from munjang.encoders.embedder import Embedder, load_embedder
from munjang.encoders.remote import RemoteAPIError, RemoteEncoder, RetryPolicy
from munjang.encoders.remote.encoder import request_batches, token_bound
from munjang.evaluation import STSEvaluator
from tests.encoders.remote.conftest import MODEL

TEXTS = ["서울의 날씨는 맑다", "Seoul weather is clear", "The stock market fell sharply", "a cat sleeps"]


def remote(url: str, **options) -> RemoteEncoder:
    waits: list[float] = []
    encoder = RemoteEncoder(f"remote:{url}#{MODEL}", sleep=waits.append, **options)
    encoder.waits = waits  # type: ignore[attr-defined]
    return encoder


def test_vectors_equal_the_local_models(server, encoder):
    with remote(server) as model:
        assert isinstance(model, Embedder)
        np.testing.assert_allclose(model.encode(TEXTS), encoder.encode(TEXTS), atol=1e-5)
        assert model.encode(TEXTS[0]).shape == (384,)
        assert model.get_embedding_dimension() == 384
        tensor = model.encode(TEXTS, convert_to_tensor=True, normalize_embeddings=True, truncate_dim=8)
        assert isinstance(tensor, torch.Tensor) and tensor.shape == (4, 8)
        np.testing.assert_allclose(tensor.norm(dim=1).numpy(), 1.0, atol=1e-6)
        prompted = model.encode(TEXTS[:2], prompt="query: ")
        np.testing.assert_allclose(prompted, encoder.encode(TEXTS[:2], prompt="query: "), atol=1e-5)
        assert model.usage.input_tokens > 0 and model.usage.retries == 0


def test_sts_evaluator_scores_as_the_local_model(server, encoder):
    pairs = list(zip(TEXTS, TEXTS[1:] + TEXTS[:1], strict=True))
    evaluator = STSEvaluator([a for a, _ in pairs], [b for _, b in pairs], [0.9, 0.1, 0.3, 0.5])
    with remote(server) as model:
        got = evaluator(model)
    want = evaluator(encoder)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == pytest.approx(want[key], abs=1e-6)


def test_requests_stay_within_the_limits(server, encoder):
    with remote(server, max_inputs_per_request=3, concurrency=2) as model:
        texts = [f"sentence number {i}" for i in range(10)]
        np.testing.assert_allclose(model.encode(texts), encoder.encode(texts), atol=1e-5)
        assert model.usage.requests == 4  # 3 + 3 + 3 + 1
    with remote(server, cache=False) as model:
        model.encode(texts, batch_size=5)
        assert model.usage.requests == 2
    batches = list(request_batches(["a" * 10, "b" * 10, "c" * 10, "d"], max_inputs=10, max_tokens=25))
    assert batches == [[0, 1], [2, 3]]
    assert token_bound("서울") == 8  # 6 UTF-8 bytes + 2 special tokens


def test_second_call_is_served_from_the_cache(proxy, proxy_and_url, encoder):
    _, url = proxy_and_url
    with remote(url) as model:
        first = model.encode(TEXTS + TEXTS[:1])
        assert model.usage.cache_misses == 4 and proxy.posts == 1
    with remote(url) as model:
        again = model.encode(TEXTS)
        assert proxy.posts == 1, "a cached text was asked for again"
        assert model.usage.requests == 0 and model.usage.cache_hits == 4
    np.testing.assert_array_equal(first[:4], again)
    with remote(url) as model:
        model.encode(TEXTS, prompt="query: ")  # another text sent, another key
        assert proxy.posts == 2 and model.usage.cache_hits == 0


def test_429_and_5xx_are_retried_honouring_retry_after(proxy, proxy_and_url, encoder):
    _, url = proxy_and_url
    proxy.fail(429, times=2, headers={"Retry-After": "7"})
    proxy.fail(500)
    proxy.fail(503, headers={"retry-after-ms": "250"})
    with remote(url, cache=False, retry=RetryPolicy(base_delay=0.1, max_delay=1.0)) as model:
        vectors = model.encode(TEXTS)
        assert model.usage.retries == 4 and model.usage.requests == 5 and proxy.posts == 5
        assert model.waits[:2] == [7.0, 7.0] and model.waits[3] == 0.25
        assert 0.0 <= model.waits[2] <= 0.4  # backoff with jitter: attempt 2 waits at most 0.1 * 2**2
    np.testing.assert_allclose(vectors, encoder.encode(TEXTS), atol=1e-5)


def test_retries_give_up_with_the_last_answer(proxy, proxy_and_url):
    _, url = proxy_and_url
    proxy.fail(502, times=3)
    with remote(url, cache=False, retry=RetryPolicy(max_retries=2)) as model:
        with pytest.raises(
            RemoteAPIError, match="502 Bad Gateway: injected 502 .gave up after 2 retries"
        ) as e:
            model.encode(TEXTS)
        assert e.value.status == 502 and model.usage.requests == 3


def test_413_from_a_proxy_is_not_retried(proxy, proxy_and_url):
    _, url = proxy_and_url
    proxy.fail(413)
    with remote(url, cache=False) as model:
        with pytest.raises(RemoteAPIError, match="413 Request Entity Too Large: injected 413$") as e:
            model.encode(TEXTS)
        assert e.value.status == 413 and proxy.posts == 1 and model.waits == []


def test_401_and_400_fail_at_once_naming_status_and_message(server, monkeypatch):
    monkeypatch.setenv("MUNJANG_REMOTE_API_KEY", "wrong")
    with remote(server, cache=False) as model:
        with pytest.raises(RemoteAPIError, match=r"401 Unauthorized: .*MUNJANG_REMOTE_API_KEY") as e:
            model.encode(TEXTS)
        assert e.value.status == 401 and model.usage.requests == 1 and model.usage.retries == 0
    monkeypatch.setenv("MUNJANG_REMOTE_API_KEY", "test-key")
    with RemoteEncoder(f"remote:{server}#{MODEL}?dimensions=999", cache=False) as model:
        with pytest.raises(RemoteAPIError, match="400 Bad Request: 'dimensions' must be between 1 and 384"):
            model.encode(TEXTS)
        assert model.usage.retries == 0
    with (
        RemoteEncoder(f"remote:{server}#no-such-model", cache=False) as model,
        pytest.raises(RemoteAPIError, match="404 Not Found: model 'no-such-model' is not served"),
    ):
        model.encode(TEXTS)


def test_a_dead_endpoint_is_retried_then_reported():
    waits: list[float] = []
    model = RemoteEncoder(
        "remote:http://127.0.0.1:9#m", cache=False, retry=RetryPolicy(max_retries=2), sleep=waits.append
    )
    with pytest.raises(RemoteAPIError, match="ConnectError.*gave up after 2 retries") as e:
        model.encode("x")
    assert e.value.status is None and len(waits) == 2 and model.usage.requests == 3


def test_dimensions_option_and_bad_input(server, encoder):
    with RemoteEncoder(f"remote:{server}#{MODEL}?dimensions=32") as model:
        assert model.get_embedding_dimension() == 32
        vectors = model.encode(TEXTS)
        local = encoder.encode(TEXTS, truncate_dim=32, normalize_embeddings=True)
        np.testing.assert_allclose(vectors, local, atol=1e-5)
        with pytest.raises(ValueError, match=r"sentences\[1\] is empty"):
            model.encode(["a", ""])
        with pytest.raises(ValueError, match="unknown prompt name 'query'"):
            model.encode(["a"], prompt_name="query")
        assert model.encode([]).shape == (0, 32)


def test_load_embedder_picks_remote_by_name(server):
    model = load_embedder(f"remote:{server}#{MODEL}", device="cpu", backend="auto")
    assert isinstance(model, RemoteEncoder) and model.name == f"remote:{server}#{MODEL}"
    with pytest.raises(ValueError, match="backend='onnx' does not apply to a remote model"):
        load_embedder(f"remote:{server}#{MODEL}", backend="onnx")
    info = model.describe()
    assert info["embedding_dimension"] == 384 and info["architecture"] == "remote"
    assert "test-key" not in repr(info)
