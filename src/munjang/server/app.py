"""The FastAPI app: POST /v1/embeddings, GET /v1/models, GET /health (OpenAPI at /openapi.json, docs
at /docs: api_docs.py), and the web page at / (its files under /static)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from pydantic import ValidationError
from starlette.requests import ClientDisconnect

from .._util import tracing
from .._util.extras import require
from ..encoders.dense.pool import EncoderProcess
from ..version import __version__
from .access import Access
from .aliases_api import add_alias_routes
from .api_docs import add_api_docs
from .backend_choice import backend_status
from .batcher import DynamicBatcher
from .collections_api import add_collection_routes, open_served
from .compute import ComputeGate
from .drop_api import add_drop_route
from .embed import embed_batched
from .errors import APIError, install_error_handlers, validation_error
from .guard import RequestGuard, default_allowed_hosts
from .metrics import ServerMetrics
from .multi_vector_api import add_multi_vector_routes
from .request_spans import RequestSpans
from .schemas import EmbeddingRequest, EmbeddingResponse, ErrorResponse, ModelCard, ModelList
from .settings import ServerSettings
from .snapshots_api import add_snapshot_routes
from .sparse_api import add_sparse_routes
from .text_api import add_text_routes

STATIC = Path(__file__).parent / "static"
# The page loads nothing from elsewhere; the policy makes the browser hold it to that.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'",
    "X-Content-Type-Options": "nosniff",
}

ERROR_ANSWERS: dict[int | str, dict[str, object]] = {
    status: {"model": ErrorResponse, "description": text}
    for status, text in [
        (400, "Invalid request"),
        (401, "Missing or wrong API key"),
        (404, "Unknown model"),
        (403, "Host or Origin not allowed, or the key lacks the scope or collection"),
        (413, "Body too large"),
        (415, "Body is not application/json"),
        (422, "Invalid field"),
    ]
}


# A body that takes longer than this to arrive is refused (408): a slow or stalled client cannot hold
# a request open for ever.
BODY_TIMEOUT_S = 30.0


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 once it passes `limit` bytes (Content-Length checked
    first, then the bytes actually received), and with 408 when it takes over BODY_TIMEOUT_S."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise APIError(
            413, f"the body is {declared} bytes, over the limit of {limit}", None, "body_too_large"
        )
    chunks: list[bytes] = []
    size = 0
    try:
        with anyio.fail_after(BODY_TIMEOUT_S):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    message = f"the body is over the limit of {limit} bytes"
                    raise APIError(413, message, None, "body_too_large")
                chunks.append(chunk)
    except TimeoutError:
        message = f"the body did not arrive within {BODY_TIMEOUT_S:g} s"
        raise APIError(408, message, None, "body_timeout") from None
    except ClientDisconnect:  # the client left mid-body: nothing to answer, nothing to log
        message = "the client disconnected before sending the whole body"
        raise APIError(400, message, None, "client_disconnected") from None
    return b"".join(chunks)


def start_model_processes(settings: ServerSettings) -> dict[str, list[EncoderProcess]]:
    """`settings.model_processes` EncoderProcesses per served model loaded from a folder, with the
    model's backend and precision, sharing this process's torch threads between them."""
    import torch

    count = settings.model_processes
    threads = max(1, torch.get_num_threads() // count)
    return {
        name: [
            EncoderProcess(
                encoder.model_folder,
                device=str(encoder.device),
                threads=threads,
                # what "auto" resolved to in this process (measured or cached): the workers run the same
                backend=encoder.configuration()[0],
                precision=encoder.configuration()[1],
                backend_options=encoder.backend_options,
                max_seq_length=encoder.max_seq_length,
            )
            for _ in range(count)
        ]
        for name, encoder in settings.batched_models().items()
        if encoder.model_folder is not None
    }


def create_app(settings: ServerSettings) -> FastAPI:
    """The ASGI app serving `settings.models` under OpenAI's embeddings API."""
    if settings.model_processes < 0:
        raise ValueError(f"model_processes must be 0 or more, not {settings.model_processes}")
    processes = start_model_processes(settings) if settings.model_processes else {}
    if settings.background_choice is not None:
        settings.background_choice.start(processes)
    batchers = {
        name: DynamicBatcher(
            encoder,
            settings.batch_max_tokens,
            settings.batch_max_wait_ms,
            compute=[p.encode_tokenized for p in processes[name]] if name in processes else None,
            max_queued_requests=settings.max_queued_requests,
            max_queued_tokens=settings.max_queued_tokens,
            max_queue_wait_s=settings.max_queue_wait_s,
            warm_up=True,
        )
        for name, encoder in settings.batched_models().items()
    }

    collections = open_served(settings)
    gate = ComputeGate(
        settings.compute_threads,
        settings.max_queued_compute,
        settings.request_timeout_s,
        settings.max_queue_wait_s,
    )

    running: list[
        AbstractAsyncContextManager[None]
    ] = []  # what the lifespan enters: the MCP transport, when served

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for context in running:
                await stack.enter_async_context(context)
            yield
        gate.close()
        if settings.background_choice is not None:
            settings.background_choice.close()
        for batcher in batchers.values():
            batcher.close()
        for group in processes.values():
            for process in group:
                process.close()
        for collection in collections.values():
            collection.close()

    app = FastAPI(
        title="munjang embeddings",
        version=__version__,
        description="OpenAI-compatible sentence embeddings served by munjang.",
        lifespan=lifespan,
        openapi_url=None,  # api_docs.py serves the spec (behind the key) and the docs (local files)
        docs_url=None,
        redoc_url=None,
    )
    install_error_handlers(app)
    started = int(time.time())
    app.state.batchers = batchers
    app.state.metrics = ServerMetrics(batchers)
    app.state.metrics.install(app)
    app.add_middleware(
        RequestGuard,
        allowed_hosts=default_allowed_hosts(settings.host, settings.allowed_hosts),
        allowed_origins=settings.allowed_origins,
        on_refusal=lambda reason: app.state.metrics.rejections.labels(reason=reason).inc(),
    )
    if settings.otlp_endpoint is not None:
        tracing.enable(settings.otlp_endpoint)
    if tracing.TRACER is not None:  # off: no middleware, nothing on the request's path
        app.add_middleware(RequestSpans)  # outermost: the request's span holds every stage

    access = Access.of(settings)
    app.state.access = access
    router = APIRouter(prefix="/v1", dependencies=[Depends(access.guard)], responses=ERROR_ANSWERS)

    @router.post(
        "/embeddings",
        response_model=EmbeddingResponse,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": EmbeddingRequest.model_json_schema()}},
            }
        },
    )
    async def create_embeddings(request: Request) -> EmbeddingResponse:
        """Embed one text or a list of texts (or token-id lists), as OpenAI's /v1/embeddings."""
        body = await read_body(request, settings.max_body_bytes)
        try:
            parsed = EmbeddingRequest.model_validate_json(body)
        except ValidationError as e:
            raise validation_error(list(e.errors())) from None
        name = parsed.model or settings.default_model
        encoder = settings.models.get(name)
        if encoder is None:
            served = ", ".join(settings.models)
            raise APIError(
                404, f"model {name!r} is not served here; served: {served}", "model", "model_not_found"
            )
        try:
            return await embed_batched(parsed, name, encoder, settings, batchers.get(name), gate, request)
        except APIError as e:
            if e.status == 503 and e.code is not None:
                app.state.metrics.rejections.labels(reason=e.code).inc()
            raise

    @router.get("/models", response_model=ModelList)
    async def list_models() -> ModelList:
        """The served models, default first."""
        return ModelList(
            data=[
                ModelCard(id=name, created=started, backend=backend_status(name, settings))
                for name in settings.models
            ]
        )

    add_text_routes(router, settings, read_body, batchers, gate)
    add_sparse_routes(router, settings, read_body)
    add_multi_vector_routes(router, settings, read_body)
    add_collection_routes(router, settings, collections, read_body, gate)
    add_drop_route(router, settings, collections)
    add_alias_routes(router, settings, collections, read_body)
    add_snapshot_routes(router, settings, collections, read_body)
    app.state.collections = collections
    app.include_router(router)
    if settings.mcp:
        require("mcp")
        from .mcp_server import ServedParts, mount_mcp

        running.append(mount_mcp(app, ServedParts(settings, collections, gate, batchers), access))
    app.state.docs = add_api_docs(app, access.protected, access.read_only)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        """The web page: search, similarity heatmap, collection map (no external resources)."""
        return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/health")
    async def health() -> dict[str, object]:
        """Liveness: always open, no API key needed."""
        return {"status": "ok", "models": list(settings.models)}

    return app
