"""Prometheus metrics for GET /metrics: requests, latencies, batch sizes and queue depth.

Each app has its own registry, so several apps in one process (tests) never share counters.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI, Response
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


# BatcherStats fields shown as munjang_batcher_requests{outcome}: "admitted" is its `requests`.
OUTCOMES = {"admitted": "requests", "refused_wait": "refused_wait", "refused_full": "refused_full",
            "expired": "expired", "cancelled": "cancelled"}  # fmt: skip


def _count_of(batcher: DynamicBatcher, outcome: str) -> Callable[[], float]:
    return lambda: float(getattr(batcher.stats, OUTCOMES[outcome]))


def _speed_of(batcher: DynamicBatcher) -> Callable[[], float]:
    return lambda: float(batcher.cost.tokens_per_s or 0.0)


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
        self.batch_seconds = Histogram(
            "munjang_batch_seconds", "Model time per batch", ["model"], buckets=LATENCY_BUCKETS, registry=reg
        )
        self.rejections = Counter(
            "munjang_rejected", "Requests refused before any work", ["reason"], registry=reg
        )
        queue = Gauge("munjang_queue_depth", "Requests waiting or being encoded", ["model"], registry=reg)
        admission = Gauge(
            "munjang_batcher_requests",
            "Requests per model by what became of them at the queue: admitted, refused by expected "
            "wait or at a hard bound, dropped when their deadline passed while queued or their client left",
            ["model", "outcome"],
            registry=reg,
        )
        speed = Gauge(
            "munjang_batcher_tokens_per_second",
            "The moving estimate of a model's speed that admission by expected wait uses (0: none yet)",
            ["model"],
            registry=reg,
        )
        for name, batcher in batchers.items():
            queue.labels(model=name).set_function(_depth_of(batcher))
            for outcome in OUTCOMES:
                admission.labels(model=name, outcome=outcome).set_function(_count_of(batcher, outcome))
            speed.labels(model=name).set_function(_speed_of(batcher))
            batcher.on_batch = self._batch_observer(name)

    def _batch_observer(self, model: str) -> Callable[[int, int, float], None]:
        rows, tokens = self.batch_rows.labels(model=model), self.batch_tokens.labels(model=model)
        seconds = self.batch_seconds.labels(model=model)

        def observe(n_rows: int, n_tokens: int, elapsed: float) -> None:
            rows.observe(n_rows)
            tokens.observe(n_tokens)
            seconds.observe(elapsed)

        return observe

    def install(self, app: FastAPI) -> None:
        app.add_middleware(_TimingMiddleware, metrics=self)

        @app.get("/metrics", include_in_schema=False)
        async def metrics() -> Response:
            """Prometheus text format; open like /health."""
            return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


class _TimingMiddleware:
    """Counts and times every HTTP request by route and status (plain ASGI: no extra task or
    stream per request, unlike Starlette's BaseHTTPMiddleware)."""

    def __init__(self, app: Any, metrics: ServerMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_status(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            path = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.latency.labels(route=path).observe(time.perf_counter() - start)
            self.metrics.requests.labels(route=path, status=str(status)).inc()
