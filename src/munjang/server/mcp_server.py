"""munjang as an MCP server (the official `mcp` SDK): tools an LLM agent calls to list collections,
search one, fetch a document, add documents and embed texts.

The tools run the HTTP routes' own code (`collections_api.search_in`, `add_to`, `embed_batched`)
with the same request models, so the same limits hold: text length, item counts, `top_k`, filter
size and depth, the compute gate's queue and deadline, the batcher's queue. Each tool's scope is
declared in `route_scopes.TOOL_SCOPES` and checked against the caller's grant: over HTTP the key of
the request (`mount_mcp`: `/mcp` on `munjang serve`, streamable HTTP, behind the same keys), over
stdio (`munjang mcp`) the one the command was started with. Any refusal or bad input is a tool
error result saying what was wrong, never a crash of the server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field, ValidationError
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..access import Grant
from ..version import __version__
from .access import GRANT, Access, audit
from .batcher import DynamicBatcher
from .collections_api import AddRequest, SearchRequest, add_to, find_served, open_served, search_in
from .compute import ComputeGate
from .embed import embed_batched
from .errors import APIError, error_response, validation_error
from .route_scopes import TOOL_SCOPES
from .schemas import EmbeddingRequest
from .served_collection import ServedCollection
from .settings import ServerSettings

INSTRUCTIONS = (
    "munjang searches document collections (Korean and English) by meaning and by keywords. "
    "Call list_collections first, then search one with a question in plain words; fetch_document "
    "gives a whole document by its id."
)


@dataclass
class ServedParts:
    """What the tools work on: the server's settings, collections, compute gate and batchers."""

    settings: ServerSettings
    collections: dict[str, ServedCollection]
    gate: ComputeGate
    batchers: dict[str, DynamicBatcher]

    @classmethod
    def open(cls, settings: ServerSettings) -> ServedParts:
        """The parts of a server without HTTP (`munjang mcp`): its collections, gate and batchers."""
        batchers = {
            name: DynamicBatcher(
                encoder,
                settings.batch_max_tokens,
                settings.batch_max_wait_ms,
                max_queued_requests=settings.max_queued_requests,
                max_queued_tokens=settings.max_queued_tokens,
                max_queue_wait_s=settings.max_queue_wait_s,
            )
            for name, encoder in settings.batched_models().items()
        }
        gate = ComputeGate(
            settings.compute_threads,
            settings.max_queued_compute,
            settings.request_timeout_s,
            settings.max_queue_wait_s,
        )
        return cls(settings, open_served(settings), gate, batchers)

    def close(self) -> None:
        self.gate.close()
        for batcher in self.batchers.values():
            batcher.close()
        for collection in self.collections.values():
            collection.close()


def request_grant(ctx: Context) -> Grant:
    """The grant `mount_mcp` gave the HTTP request that carries this tool call."""
    request: Any = ctx.request_context.request
    grant: Grant = request.scope[GRANT]
    return grant


@asynccontextmanager
async def tool_errors() -> AsyncIterator[None]:
    """A refusal or bad input as the tool's error result: `403 missing_scope_write: ...`."""
    try:
        yield
    except APIError as e:
        raise ToolError(f"{e.status} {e.code or 'error'}: {e.message}") from None
    except ValidationError as e:
        err = validation_error(list(e.errors()))
        raise ToolError(f"{err.status} {err.code or 'error'}: {err.message}") from None


def build_mcp(parts: ServedParts, grant_of: Callable[[Context], Grant]) -> MCPServer:
    """The MCP server of `parts`; `grant_of` says what the caller of a tool may do."""
    server: MCPServer = MCPServer("munjang", instructions=INSTRUCTIONS, version=__version__)
    settings = parts.settings

    def allowed(ctx: Context, tool: str, collection: str | None = None) -> Grant:
        grant = grant_of(ctx)
        Access.check(grant, TOOL_SCOPES[tool], collection)
        return grant

    @server.tool(
        description="List the document collections you can search: each one's name, how many "
        "documents it holds, and the model that embeds it."
    )
    async def list_collections(ctx: Context) -> dict[str, Any]:
        async with tool_errors():
            grant = allowed(ctx, "list_collections")
            found = []
            for name in [n for n in parts.collections if grant.reaches(n)]:
                try:
                    target = await find_served(parts.collections, name, parts.settings)
                except APIError:
                    continue
                info = await target.read(lambda c: c.info())
                found.append({"name": name, "documents": info.get("documents"), "model": info.get("model")})
            return {"collections": found}

    @server.tool(
        description="Search a collection for the passages that best answer a query (Korean or "
        "English). Returns the best hits first, each with its document id, the passage text, where "
        "it is in the document (location: page, section), and its scores. mode 'hybrid' (default) "
        "combines meaning and keywords; 'dense' is meaning only, 'lexical' keywords only (BM25). "
        'filter limits the hits by metadata, e.g. {"year": {"$gte": 2020}}.'
    )
    async def search(
        ctx: Context,
        collection: Annotated[str, Field(description="The collection's name (see list_collections).")],
        query: Annotated[str, Field(description="What to look for, in plain words.")],
        k: Annotated[int, Field(description="How many hits to return (1-1000).")] = 5,
        mode: Literal["hybrid", "dense", "lexical", "sparse", "multi_vector", "m3"] = "hybrid",
        filter: Annotated[
            dict[str, Any] | None, Field(description='Metadata filter, e.g. {"lang": "ko"}.')
        ] = None,
    ) -> dict[str, Any]:
        async with tool_errors():
            allowed(ctx, "search", collection)
            parsed = SearchRequest.model_validate(
                {"query": query, "top_k": k, "mode": mode, "filter": filter}
            )
            target = await find_served(parts.collections, collection, parts.settings)
            found = await search_in(collection, target, parsed, settings, parts.gate, None)
            hits = [
                {field: h[field] for field in ("id", "text", "location", "score", "scores", "metadata")}
                for h in found["data"]
            ]
            return {"hits": hits}

    @server.tool(
        description="Fetch one whole document of a collection by its id (as given in a search hit): "
        "its full text and metadata."
    )
    async def fetch_document(
        ctx: Context,
        collection: Annotated[str, Field(description="The collection's name.")],
        id: Annotated[str, Field(description="The document's id.")],
    ) -> dict[str, Any]:
        async with tool_errors():
            allowed(ctx, "fetch_document", collection)
            target = await find_served(parts.collections, collection, parts.settings)
            (doc,) = await target.read(lambda c: c.get([id]), parts.gate)
            if doc is None:
                raise APIError(404, f"collection {collection!r} has no document {id!r}", "id")
            return {"id": doc.id, "text": doc.text, "metadata": doc.metadata}

    @server.tool(
        description="Add documents to a collection (needs a key with the write scope). Each "
        "document has an id, its text and optional metadata; on_conflict says what to do with an id "
        "that is already there: 'error', 'skip' or 'upsert' (replace)."
    )
    async def add_documents(
        ctx: Context,
        collection: Annotated[str, Field(description="The collection's name.")],
        documents: Annotated[
            list[dict[str, Any]],
            Field(description='[{"id": "...", "text": "...", "metadata": {...}}, ...]'),
        ],
        on_conflict: Literal["error", "skip", "upsert"] = "error",
    ) -> dict[str, Any]:
        async with tool_errors():
            grant = allowed(ctx, "add_documents", collection)
            parsed = AddRequest.model_validate({"documents": documents, "on_conflict": on_conflict})
            target = await find_served(parts.collections, collection, parts.settings)
            result = await add_to(target, parsed, settings)
            counts = {"added": result.added, "updated": result.updated, "skipped": result.skipped}
            audit(grant, "mcp add_documents", collection, {"status": 200, **counts})
            return counts

    @server.tool(
        description="Embed texts into vectors with a served model (default: the server's first), "
        "for similarity you compute yourself. Returns one vector per text."
    )
    async def embed(
        ctx: Context,
        texts: Annotated[list[str], Field(description="The texts to embed.")],
        model: Annotated[str | None, Field(description="A served model's name (default: the first).")] = None,
    ) -> dict[str, Any]:
        async with tool_errors():
            allowed(ctx, "embed")
            parsed = EmbeddingRequest.model_validate({"input": texts, "model": model})
            name = parsed.model or settings.default_model
            encoder = settings.models.get(name)
            if encoder is None:
                raise APIError(
                    404, f"model {name!r} is not served here; served: {', '.join(settings.models)}"
                )
            batcher = parts.batchers.get(name)
            answer = await embed_batched(parsed, name, encoder, settings, batcher, parts.gate)
            return {"model": name, "embeddings": [row.embedding for row in answer.data]}

    return server


class MCPEndpoint:
    """`/mcp` on the HTTP server: the caller's key checked as on /v1 (401 without a known one),
    then the streamable-HTTP transport; each tool checks its own scope."""

    def __init__(self, server: MCPServer, access: Access, settings: ServerSettings) -> None:
        # The Host and Origin rules are the server's own (guard.py), for /mcp as for /v1.
        server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            max_request_body_size=settings.max_body_bytes,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager = server.session_manager
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            scope[GRANT] = self.access.authenticate(headers)
        except APIError as e:
            await error_response(e.status, e.message, e.param, e.code)(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)


def mount_mcp(app: FastAPI, parts: ServedParts, access: Access) -> AbstractAsyncContextManager[None]:
    """Serve the MCP tools at `/mcp`; returns what runs their transport (enter it in the lifespan)."""
    endpoint = MCPEndpoint(build_mcp(parts, request_grant), access, parts.settings)
    app.router.routes.append(
        Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"], include_in_schema=False)
    )
    return endpoint.manager.run()
