"""Optional OpenTelemetry traces of where a request's time goes: a span per request, with child
spans for tokenize, queue wait, encode, each retriever, fusion and rerank (attributes: collection,
mode, sizes).

Off by default, and then free: opentelemetry is not imported, `span()` hands back one shared
do-nothing context, and every other call returns at its first line, on the one flag `TRACER`.
`enable()` (`munjang serve --otlp-endpoint`, or a test with its own provider) turns it on for the
process. Work handed to another thread keeps its place in the trace through `carry()`.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from .extras import require

T = TypeVar("T")

# The tracer while tracing is on; None (the default) is off.
TRACER: Any = None
_OFF: AbstractContextManager[None] = nullcontext()


def enable(endpoint: str | None = None, provider: Any = None) -> None:
    """Trace from now on: spans go to `provider` (an SDK TracerProvider, e.g. a test's with an
    in-memory exporter), or else are exported over OTLP/HTTP to `endpoint` in batches."""
    global TRACER
    require("opentelemetry.sdk")
    if provider is None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        exporter = require("opentelemetry.exporter.otlp.proto.http.trace_exporter").OTLPSpanExporter
        provider = TracerProvider(resource=Resource.create({"service.name": "munjang"}))
        provider.add_span_processor(BatchSpanProcessor(exporter(endpoint=endpoint)))
    TRACER = provider.get_tracer("munjang")


def disable() -> None:
    """Stop tracing (spans already started still end)."""
    global TRACER
    TRACER = None


def span(name: str, **attributes: Any) -> AbstractContextManager[Any]:
    """A child span of the current one for the `with` block (nothing when tracing is off)."""
    if TRACER is None:
        return _OFF
    return TRACER.start_as_current_span(name, attributes=_values(attributes))


def annotate(**attributes: Any) -> None:
    """Add attributes to the current span (the request's, in a route)."""
    if TRACER is None:
        return
    from opentelemetry import trace

    trace.get_current_span().set_attributes(_values(attributes))


def record(name: str, start_ns: int, end_ns: int, **attributes: Any) -> None:
    """A finished child span of the current one, timed elsewhere (a batcher's queue and batch)."""
    if TRACER is None:
        return
    done = TRACER.start_span(name, start_time=start_ns, attributes=_values(attributes))
    done.end(end_time=end_ns)


def carry(fn: Callable[..., T], waited: str | None = None) -> Callable[..., T]:
    """`fn`, to run on another thread inside the current span; with `waited`, a span of that name
    records how long it waited for the thread."""
    if TRACER is None:
        return fn
    context = contextvars.copy_context()
    queued = time.time_ns()

    def run(*args: Any, **kwargs: Any) -> T:
        if waited is not None:
            context.run(record, waited, queued, time.time_ns())
        return context.run(fn, *args, **kwargs)

    return run


def _values(attributes: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attributes.items() if isinstance(v, (str, bool, int, float))}
