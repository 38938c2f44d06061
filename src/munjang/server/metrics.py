"""Prometheus metrics for GET /metrics: requests, latencies, batch sizes and queue depth.

Each app has its own registry, so several apps in one process (tests) never share counters.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping

from fastapi import FastAPI, Request, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from .batcher import DynamicBatcher

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
ROW_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
TOKEN_BUCKETS = (16, 64, 256, 1024, 2048, 4096, 8192, 16384)


def _depth_of(batcher: DynamicBatcher) -> Callable[[], float]:
    return lambda: float(batcher.queue_depth)


class ServerMetrics:
    """The app's metrics; `install` adds the timing middleware and the /metrics route."""

    def __init__(self, batchers: Mapping[str, DynamicBatcher]) -> None:
        self.registry = CollectorRegistry()
        reg = self.registry
        self.requests = Counter("munjang_requests", "Requests answered", ["route", "status"], registry=reg)
        self.latency = Histogram(
            "munjang_request_seconds", "Time to answer", ["route"], buckets=LATENCY_BUCKETS, registry=reg
        )
        self.batch_rows = Histogram(
            "munjang_batch_rows", "Inputs per model batch", ["model"], buckets=ROW_BUCKETS, registry=reg
        )
        self.batch_tokens = Histogram(
            "munjang_batch_tokens", "Tokens per model batch", ["model"], buckets=TOKEN_BUCKETS, registry=reg
        )
        queue = Gauge("munjang_queue_depth", "Requests waiting or being encoded", ["model"], registry=reg)
        for name, batcher in batchers.items():
            queue.labels(model=name).set_function(_depth_of(batcher))
            batcher.on_batch = self._batch_observer(name)

    def _batch_observer(self, model: str) -> Callable[[int, int], None]:
        rows, tokens = self.batch_rows.labels(model=model), self.batch_tokens.labels(model=model)

        def observe(n_rows: int, n_tokens: int) -> None:
            rows.observe(n_rows)
            tokens.observe(n_tokens)

        return observe

    def install(self, app: FastAPI) -> None:
        @app.middleware("http")
        async def timing(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
            start = time.perf_counter()
            response = await call_next(request)
            route = request.scope.get("route")
            path = getattr(route, "path", "unmatched")
            self.latency.labels(route=path).observe(time.perf_counter() - start)
            self.requests.labels(route=path, status=str(response.status_code)).inc()
            return response

        @app.get("/metrics", include_in_schema=False)
        async def metrics() -> Response:
            """Prometheus text format; open like /health."""
            return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)
