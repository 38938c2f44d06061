"""POST /embeddings to an OpenAI-compatible API, with retries that a busy or flaky API needs.

A 429 or a 500/502/503/504 answer, and a connection that fails or times out, are retried with
exponential backoff and full jitter (a random wait in [0, min(max_delay, base_delay * 2**attempt)]),
or after exactly the wait the server asked for in `Retry-After` (seconds or an HTTP date) or
`retry-after-ms` (OpenAI). Any other error status (400, 401, 403, 404, 413, 422, ...) is the
caller's to fix, so it is raised at once as a RemoteAPIError naming the status and the server's message.
"""

from __future__ import annotations

import base64
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import numpy as np

from ..._util.extras import require
from ...errors import MunjangError
from .usage import RemoteUsage

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class RemoteAPIError(MunjangError):
    """The API refused a request, or kept failing past the retries: `status` (None when it never
    answered) and the server's `message`."""

    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before repeating a request that may succeed later."""

    max_retries: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number `attempt` (0-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return rng.uniform(0.0, min(self.max_delay, self.base_delay * 2**attempt))


def retry_after_seconds(headers: Any) -> float | None:
    """The wait a server asked for: `retry-after-ms`, else `Retry-After` in seconds or as an HTTP date."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None


def error_message(response: Any) -> str:
    """The server's own words: OpenAI's and munjang's `{"error": {"message"}}`, TEI's `{"error": "..."}`,
    else the body's text (shortened)."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return str(body)[:500]


def decode_vector(value: Any) -> np.ndarray:
    """A vector from a float list or OpenAI's base64 little-endian float32."""
    if isinstance(value, str):
        return np.frombuffer(base64.b64decode(value), dtype="<f4").astype(np.float32)
    return np.asarray(value, dtype=np.float32)


class EmbeddingsAPI:
    """One OpenAI-compatible embeddings endpoint: `embed(model, texts)` -> (vectors, input tokens).

    `http` may pass a ready `httpx.Client` (tests); `sleep` is how the waits between retries happen.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        usage: RemoteUsage | None = None,
        key_hint: str = "",
        http: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        seed: int | None = None,
    ) -> None:
        self.httpx = require("httpx")
        self.url = base_url.rstrip("/") + "/embeddings"
        self.retry = retry or RetryPolicy()
        self.usage = usage or RemoteUsage()
        self.key_hint = key_hint
        self.sleep = sleep
        self._rng = random.Random(seed)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = http if http is not None else self.httpx.Client(timeout=timeout)
        self.headers = headers

    def embed(
        self, model: str, texts: Sequence[str], dimensions: int | None = None
    ) -> tuple[np.ndarray, int]:
        """(len(texts), dim) float32 vectors in input order, and the input tokens the API counted."""
        body: dict[str, Any] = {"model": model, "input": list(texts), "encoding_format": "float"}
        if dimensions is not None:
            body["dimensions"] = dimensions
        answer = self._post(body)
        return self._vectors(answer, len(texts))

    def _post(self, body: dict[str, Any]) -> Any:
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                response = self.http.post(self.url, json=body, headers=self.headers)
            except self.httpx.TransportError as e:
                self.usage.add(requests=1)
                failure = f"POST {self.url}: {type(e).__name__}: {e}"
                status: int | None = None
            else:
                self.usage.add(requests=1)
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError:
                        raise RemoteAPIError(
                            response.status_code, f"POST {self.url}: the answer is not JSON"
                        ) from None
                status = response.status_code
                failure = f"POST {self.url}: {status} {response.reason_phrase}: {error_message(response)}"
                if status not in RETRY_STATUSES:
                    hint = f" ({self.key_hint})" if status in (401, 403) and self.key_hint else ""
                    raise RemoteAPIError(status, failure + hint)
                retry_after = retry_after_seconds(response.headers)
            if attempt >= self.retry.max_retries:
                raise RemoteAPIError(status, f"{failure} (gave up after {attempt} retries)")
            self.sleep(self.retry.delay(attempt, retry_after, self._rng))
            attempt += 1
            self.usage.add(retries=1)

    def _vectors(self, answer: Any, count: int) -> tuple[np.ndarray, int]:
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or len(data) != count:
            got = len(data) if isinstance(data, list) else "no"
            raise RemoteAPIError(200, f"POST {self.url}: {got} embeddings in the answer for {count} inputs")
        rows: list[np.ndarray | None] = [None] * count
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            if not isinstance(index, int) or not 0 <= index < count or rows[index] is not None:
                raise RemoteAPIError(200, f"POST {self.url}: bad or repeated index {index!r} in the answer")
            rows[index] = decode_vector(item.get("embedding"))
        dims = {len(r) for r in rows if r is not None}
        if len(dims) != 1:
            raise RemoteAPIError(200, f"POST {self.url}: embeddings of different lengths {sorted(dims)}")
        usage = answer.get("usage") or {}
        tokens = usage.get("prompt_tokens", usage.get("total_tokens", 0)) if isinstance(usage, dict) else 0
        return np.stack([r for r in rows if r is not None]), int(tokens or 0)

    def close(self) -> None:
        self.http.close()
