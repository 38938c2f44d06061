"""The retry policy's waits, Retry-After parsing, error messages and answer checks of the transport."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import numpy as np
import pytest

from munjang.encoders.remote import RemoteAPIError, RetryPolicy
from munjang.encoders.remote.transport import EmbeddingsAPI, decode_vector, error_message, retry_after_seconds


def test_backoff_is_exponential_with_full_jitter_and_capped():
    policy = RetryPolicy(base_delay=0.5, max_delay=4.0)
    rng = random.Random(0)
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)]:
        waits = [policy.delay(attempt, None, rng) for _ in range(200)]
        assert min(waits) >= 0 and max(waits) <= ceiling and max(waits) > ceiling * 0.8
    assert policy.delay(5, 3.0, rng) == 3.0
    assert RetryPolicy(max_retry_after=10).delay(0, 500.0, rng) == 10.0


def test_retry_after_forms():
    assert retry_after_seconds(httpx.Headers({"Retry-After": "3"})) == 3.0
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "1500", "Retry-After": "9"})) == 1.5
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 < retry_after_seconds(httpx.Headers({"Retry-After": later})) <= 30  # type: ignore[operator]
    assert retry_after_seconds(httpx.Headers({"Retry-After": "soon"})) is None
    assert retry_after_seconds(httpx.Headers({})) is None


def test_error_messages_of_each_api_shape():
    openai = httpx.Response(400, json={"error": {"message": "too long", "type": "invalid_request_error"}})
    tei = httpx.Response(
        413, json={"error": "batch size 64 > maximum allowed batch size 32", "error_type": "Validation"}
    )
    plain = httpx.Response(502, text="<html>bad gateway</html>")
    assert error_message(openai) == "too long"
    assert error_message(tei).startswith("batch size 64")
    assert error_message(plain) == "<html>bad gateway</html>"


def answering(payload) -> EmbeddingsAPI:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=payload))
    return EmbeddingsAPI("http://api/v1", http=httpx.Client(transport=transport))


def test_answers_are_put_in_input_order_and_checked():
    b64 = "AACAPwAAAEA="  # float32 [1.0, 2.0]
    api = answering(
        {
            "data": [{"index": 1, "embedding": [3, 4]}, {"index": 0, "embedding": b64}],
            "usage": {"prompt_tokens": 7},
        }
    )
    vectors, tokens = api.embed("m", ["a", "b"])
    np.testing.assert_array_equal(vectors, [[1, 2], [3, 4]])
    assert tokens == 7 and decode_vector(b64).dtype == np.float32
    with pytest.raises(RemoteAPIError, match="1 embeddings in the answer for 2 inputs"):
        answering({"data": [{"index": 0, "embedding": [1]}]}).embed("m", ["a", "b"])
    with pytest.raises(RemoteAPIError, match="repeated index 0"):
        answering({"data": [{"index": 0, "embedding": [1]}] * 2}).embed("m", ["a", "b"])
    with pytest.raises(RemoteAPIError, match="different lengths"):
        answering({"data": [{"index": 0, "embedding": [1]}, {"index": 1, "embedding": [1, 2]}]}).embed(
            "m", ["a", "b"]
        )
