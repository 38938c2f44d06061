"""Collections over HTTP: list, create, info, add documents, delete documents, search, drop.

Each served collection lives on its own worker thread (SQLite connections belong to the thread that
opened them), so its operations run one at a time, off the event loop. Routes:

    GET  /v1/collections                     the served collections and their info
    POST /v1/collections                     {"name", "model"?, "index"?: exact|hnsw} (a collections
                                              dir or database)
    GET  /v1/collections/{name}              info
    POST /v1/collections/{name}/documents    {"documents": [{"id", "text", "metadata"?}], "on_conflict"?}
    POST /v1/collections/{name}/delete       {"ids": [...]}
    POST /v1/collections/{name}/search       {"query", "top_k"?, "mode"?, "filter"?, "fusion"?, "weights"?,
                                              "rerank"?, "rerank_k"?, "unit"?, "aggregate"?}; each hit
                                              has its `passage` span and `matched_terms`; with
                                              "image" (base64) in place of "query": search by image
    GET  /v1/collections/{name}/images/{id}  a stored image document's image (images_api.py)
    POST /v1/collections/{name}/map          {"method"?: auto|pca|umap, "limit"?, "filter"?}: 2-D points
    DELETE /v1/collections/{name}            drop the collection and all it holds (drop_api.py): the
                                              demo and configured ones too; 404 unknown, 409 refused

Every {name} may be an alias of the collections folder (aliases_api.py), resolved when the request
arrives.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, cast

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from .._util.tracing import annotate
from ..applications.projection import project_2d, script_groups, umap_available
from ..search import CollectionError, ReadOnlyError, StorageFullError
from ..search.backends.filters import compile_filter
from ..search.collection.collection import Collection
from ..search.collection.sections import labelled
from ..search.index.fusion import check_weights
from .access import check_collection, grant_of, record
from .aliases_api import alias_target
from .analysis_api import add_analysis_routes
from .compute import ComputeGate
from .errors import APIError
from .files_api import add_file_routes
from .images_api import (
    add_image_routes,
    check_image_collection,
    check_image_size,
    decode_image_query,
    holds_images,
)
from .schemas import Text
from .served_collection import ServedCollection
from .served_encoders import share_served_encoder
from .settings import ServerSettings
from .text_api import body_schema, non_empty_text, parse

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# UMAP's cost grows faster than the points it maps: past this many, "auto" maps with PCA and
# "umap" is refused naming the limit, so one /map holds a core for seconds, not minutes.
MAX_UMAP_POINTS = 2000
# An image query is resized to the model's input (224 pixels for CLIP): a larger one only costs memory.
MAX_QUERY_PIXELS = 4096 * 4096


class CreateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: StrictStr
    model: StrictStr | None = Field(default=None, description="A served model (default: the first).")
    index: Literal["exact", "hnsw"] = "exact"
    chunk_tokens: StrictInt | None = Field(
        default=None,
        ge=16,
        le=8192,
        description="Passage budget in tokens (default 128; BM25 reads each passage's window).",
    )
    lexical_context: Literal["window", "passage"] = Field(
        default="window", description="What BM25 reads for a passage: its window of the document, or itself."
    )
    late_chunking: StrictBool = False


class DocumentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: StrictStr
    text: Text
    metadata: dict[str, Any] | None = None


class AddRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    documents: list[DocumentIn]
    on_conflict: Literal["error", "skip", "upsert"] = "error"


class DeleteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ids: list[StrictStr]


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: Text | None = Field(default=None, description="The query text (or give `image`).")
    image: StrictStr | None = Field(
        default=None, description="A query image, base64 or a data: URI, for a CLIP collection."
    )
    top_k: StrictInt = Field(default=10, ge=1, le=1000)
    mode: Literal["dense", "lexical", "sparse", "multi_vector", "hybrid", "m3"] | None = Field(
        default=None, description="Default: hybrid for a text query, dense for an image."
    )
    filter: dict[str, Any] | None = None
    fusion: Literal["weighted", "rrf"] | None = None
    weights: list[StrictFloat | StrictInt] | None = None
    rerank: StrictBool = False
    rerank_k: StrictInt | None = Field(default=None, ge=1)
    unit: Literal["document", "passage"] = "document"
    aggregate: Literal["max", "sum"] = "max"


class MapRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    method: Literal["auto", "pca", "umap"] = "auto"
    limit: StrictInt = Field(default=2000, ge=1, le=20000)
    filter: dict[str, Any] | None = None


def check_filter(spec: dict[str, Any] | None) -> None:
    """400 naming `filter` for a filter that would not compile (bad key, operator or value; too deep
    or too large), before any work."""
    if spec is None:
        return
    try:
        compile_filter(spec)
    except ValueError as e:
        raise APIError(400, f"invalid 'filter': {e}", "filter") from None


def checked_weights(weights: list[float | int] | None, retrievers: list[str]) -> None:
    """400 naming `weights` for weights hybrid fusion would refuse (one per retriever, finite,
    bounded, one positive)."""
    if weights is None:
        return
    try:
        check_weights(len(retrievers), weights)
    except ValueError as e:
        raise APIError(400, f"invalid 'weights' ({', '.join(retrievers)}): {e}", "weights") from None


def open_served(settings: ServerSettings) -> dict[str, ServedCollection]:
    """The collections named in `settings.collection_paths`, plus every collection folder found in
    `settings.collections_dir`."""
    paths = dict(settings.collection_paths)
    if settings.collections_dir is not None:
        for name in Collection.names(settings.collections_dir):
            paths.setdefault(name, Path(settings.collections_dir) / name)
    models = settings.models
    served = {
        name: ServedCollection(
            _opener(path, models, prepare=settings.collection_builders.get(name)),
            _twin_opener(path),
            deferred=name in settings.collection_builders,
            where=(path, None),
        )
        for name, path in paths.items()
    }
    if settings.collections_db is not None:
        for name in Collection.names(settings.collections_db):
            db = settings.collections_db
            served.setdefault(name, serve_existing(name, models, db))
    return served


def serve_existing(
    where: Path | str, models: dict[str, Any], backend: str | None, deferred: bool = False
) -> ServedCollection:
    """An existing collection, served (`deferred`: opened on its thread while the server answers)."""
    return ServedCollection(
        _opener(where, models, backend),
        _twin_opener(where, backend),
        deferred=deferred,
        where=(where, backend),
    )


def _opener(
    path: Path | str,
    models: dict[str, Any],
    backend: str | None = None,
    prepare: Callable[[], object] | None = None,
) -> Callable[[], Collection]:
    """Opens a served collection (after `prepare()`, which builds it, if given); a collection of a
    served model encodes with the served encoder."""

    def open_collection() -> Collection:
        if prepare is not None:
            prepare()
        return share_served_encoder(Collection.open(path, backend=backend), models)

    return open_collection


def _twin_opener(path: Path | str, backend: str | None = None) -> Callable[[Collection], Collection]:
    """Opens a read-only twin of a served collection, sharing its encoder."""
    return lambda writer: Collection.open(
        path, backend=backend, encoder=writer.encoder, readonly=True, background_refresh=True
    )


async def find_served(
    served: dict[str, ServedCollection], name: str, settings: ServerSettings
) -> ServedCollection:
    """The served collection `name`, or the one the alias `name` points at, once open; 404 naming
    those served when there is none. An alias is resolved once, here: the request runs on the
    collection it names now, to its end."""
    found = served.get(name)
    if found is None:
        found = served.get(alias_target(settings, name) or "")
    if found is None:
        known = ", ".join(served) or "none"
        raise APIError(404, f"collection {name!r} is not served here; served: {known}", "name")
    return await found.ready()


def check_add_size(chars: int, settings: ServerSettings) -> None:
    """413 when one request would add more than `max_chars_per_add` characters: all of them are
    analysed and encoded, so this bounds the request's CPU time whatever its shape."""
    limit = settings.max_chars_per_add
    if chars > limit:
        message = (
            f"the documents hold {chars:,} characters in all, over the server's limit of {limit:,} "
            "per request (max_chars_per_add; munjang serve --max-add-chars): send them in several requests"
        )
        raise APIError(413, message, "documents", "too_many_characters")


async def add_to(target: ServedCollection, parsed: AddRequest, settings: ServerSettings) -> Any:
    """Add a request's documents to `target` under the server's limits (its count and text
    bounds); its AddResult. Shared by the HTTP route and the MCP tool."""
    if not parsed.documents:
        raise APIError(400, "'documents' must not be empty", "documents", "empty_input")
    if len(parsed.documents) > settings.max_inputs_per_request:
        raise APIError(400, f"'documents' has over {settings.max_inputs_per_request} items", "documents")
    for i, doc in enumerate(parsed.documents):
        non_empty_text(doc.text, f"documents[{i}].text", settings)
    check_add_size(sum(len(doc.text) for doc in parsed.documents), settings)
    docs = parsed.documents
    annotate(documents=len(docs))
    return await target.call(
        target.collection.add,
        [d.id for d in docs],
        [d.text for d in docs],
        [d.metadata for d in docs],
        on_conflict=parsed.on_conflict,
        show_progress_bar=False,
    )


async def search_in(
    name: str,
    target: ServedCollection,
    parsed: SearchRequest,
    settings: ServerSettings,
    gate: ComputeGate,
    request: Request | None,
) -> dict[str, Any]:
    """One search of a served collection, checked and bounded as every search (under `gate`; dropped
    if the HTTP client of `request` leaves). Shared by the HTTP route and the MCP tool."""
    if (parsed.query is None) == (parsed.image is None):
        raise APIError(400, "give either 'query' (text) or 'image' (base64)", "query")
    if parsed.image is not None:
        check_image_size(parsed.image, settings.max_body_bytes)
    elif parsed.query is not None:
        non_empty_text(parsed.query, "query", settings)
    check_filter(parsed.filter)
    if parsed.mode == "sparse" and target.collection.sparse is None:
        raise APIError(400, f"collection {name!r} has no sparse retriever", "mode")
    if parsed.mode == "multi_vector" and target.collection.multi_vector is None:
        raise APIError(400, f"collection {name!r} has no multi_vector retriever", "mode")
    if parsed.mode == "m3" and target.collection.m3 is None:
        raise APIError(400, f"collection {name!r} is not a bge-m3 collection (m3_model)", "mode")
    checked_weights(parsed.weights, target.collection.retrievers("m3" if parsed.mode == "m3" else "hybrid"))
    reranker = None
    if parsed.rerank:
        if not settings.rerankers:
            raise APIError(400, "rerank asked, but no reranker is served (--reranker)", "rerank")
        reranker = next(iter(settings.rerankers.values()))

    def search_with_terms(collection: Collection) -> tuple[list[Any], list[list[str]]]:
        query: Any = parsed.query
        if parsed.image is not None:  # the model is checked before any pixel is decoded
            check_image_collection(collection, name)
            query = decode_image_query(parsed.image, settings.max_body_bytes, MAX_QUERY_PIXELS)
        hits = collection.search(
            query,
            parsed.top_k,
            mode=parsed.mode or ("dense" if parsed.image is not None else "hybrid"),
            filter=parsed.filter,
            fusion=parsed.fusion,
            weights=parsed.weights,
            rerank=reranker,
            rerank_k=parsed.rerank_k,
            unit=parsed.unit,
            aggregate=parsed.aggregate,
        )
        if parsed.query is None:
            return hits, [[] for _ in hits]
        return hits, collection.matched_terms(parsed.query, hits)

    annotate(collection=name, mode=parsed.mode or "hybrid", k=parsed.top_k, rerank=parsed.rerank)
    hits, terms = await target.read(search_with_terms, gate, request)
    annotate(hits=len(hits))
    return {
        "object": "list",
        "data": [
            {
                "id": h.id,
                "text": h.text,
                "metadata": h.metadata,
                "score": h.score,
                "scores": h.scores,
                "passage": {"chunk": h.chunk, "start": h.start, "end": h.end, "partial": h.partial},
                "location": labelled(h.metadata, h.start),
                "matched_terms": matched,
            }
            for h, matched in zip(hits, terms, strict=True)
        ],
    }


def add_collection_routes(
    router: APIRouter,
    settings: ServerSettings,
    served: dict[str, ServedCollection],
    read_body: Any,
    gate: ComputeGate,
) -> None:
    """Register the collection routes on the (key-protected) /v1 router. Searches and maps are
    bounded by `gate` (queue bound, deadline, cancelled when the client leaves)."""

    async def named(name: str) -> ServedCollection:
        return await find_served(served, name, settings)

    async def info_of(name: str) -> dict[str, Any]:
        info: dict[str, Any] = await (await named(name)).read(
            lambda collection: {**collection.info(), "images": holds_images(collection)}
        )
        return {"name": name, **info}

    @router.get("/collections")
    async def list_collections(request: Request) -> dict[str, Any]:
        """The served collections with their sizes and settings (those the key may touch)."""
        found = []
        grant = grant_of(request)
        # a collection created or dropped meanwhile changes `served`
        for name in [n for n in served if grant.reaches(n)]:
            try:
                found.append(await info_of(name))
            except APIError as e:
                if e.status != 404:
                    raise
        return {"object": "list", "data": found}

    @router.post("/collections", status_code=201, openapi_extra=body_schema(CreateRequest))
    async def create_collection(request: Request) -> dict[str, Any]:
        """A new, empty collection in the server's collections folder, embedded by a served model."""
        parsed = parse(CreateRequest, await read_body(request, settings.max_body_bytes))
        if settings.collections_dir is None and settings.collections_db is None:
            raise APIError(
                400,
                "this server has no place for new collections "
                "(start it with --collections-dir or --collections-db)",
            )
        if not NAME.fullmatch(parsed.name):
            raise APIError(400, "'name' must be 1-64 letters, digits, '_', '-' or '.'", "name")
        check_collection(grant_of(request), parsed.name)
        if parsed.name in served:
            raise APIError(409, f"collection {parsed.name!r} already exists", "name", "already_exists")
        if len(served) >= settings.max_collections:
            message = f"this server serves {len(served)} collections, its limit (--max-collections)"
            raise APIError(400, message, "name", "too_many_collections")
        model_name = parsed.model or settings.default_model
        encoder = settings.models.get(model_name)
        if encoder is None:
            raise APIError(404, f"model {model_name!r} is not served here", "model")
        source = encoder.model_folder or model_name
        db = settings.collections_db
        chunking: dict[str, Any] = {"late": parsed.late_chunking, "lexical_context": parsed.lexical_context}
        if parsed.chunk_tokens is not None:
            chunking["max_tokens"] = parsed.chunk_tokens

        where = parsed.name if db is not None else Path(cast(Path, settings.collections_dir)) / parsed.name

        def create() -> Collection:
            return Collection.create(
                where, str(source), backend=db, encoder=encoder, index=parsed.index, chunking=chunking
            )

        try:
            served[parsed.name] = ServedCollection(create, _twin_opener(where, db), where=(where, db))
        except StorageFullError as e:
            raise APIError(507, str(e), None, "disk_full") from e
        except ReadOnlyError as e:
            raise APIError(409, str(e), "name", "read_only") from e
        except (CollectionError, ValueError) as e:
            raise APIError(400, str(e), "name") from e
        record(request, parsed.name)
        return await info_of(parsed.name)

    @router.get("/collections/{name}")
    async def collection_info(name: str) -> dict[str, Any]:
        """Size and settings of one collection."""
        return await info_of(name)

    @router.post("/collections/{name}/documents", openapi_extra=body_schema(AddRequest))
    async def add_documents(name: str, request: Request) -> dict[str, Any]:
        """Add (or skip / upsert) documents; everything is durable when the answer comes."""
        target = await named(name)
        parsed = parse(AddRequest, await read_body(request, settings.max_body_bytes))
        result = await add_to(target, parsed, settings)
        record(request, added=result.added, updated=result.updated, skipped=result.skipped)
        return {"added": result.added, "updated": result.updated, "skipped": result.skipped}

    @router.post("/collections/{name}/delete", openapi_extra=body_schema(DeleteRequest))
    async def delete_documents(name: str, request: Request) -> dict[str, Any]:
        """Delete documents by id; unknown ids are ignored and not counted."""
        target = await named(name)
        parsed = parse(DeleteRequest, await read_body(request, settings.max_body_bytes))
        deleted = await target.call(target.collection.delete, parsed.ids)
        record(request, deleted=deleted)
        return {"deleted": deleted}

    @router.post("/collections/{name}/search", openapi_extra=body_schema(SearchRequest))
    async def search(name: str, request: Request) -> dict[str, Any]:
        """Dense, BM25, sparse, multi-vector, hybrid or bge-m3 search with an optional metadata filter
        and cross-encoder rerank."""
        target = await named(name)
        parsed = parse(SearchRequest, await read_body(request, settings.max_body_bytes))
        return await search_in(name, target, parsed, settings, gate, request)

    add_image_routes(router, named)
    add_file_routes(router, settings, named, read_body, gate)
    add_analysis_routes(router, settings, named, read_body, gate)

    @router.post("/collections/{name}/map", openapi_extra=body_schema(MapRequest))
    async def collection_map(name: str, request: Request) -> dict[str, Any]:
        """A 2-D map of (up to `limit`) documents: PCA, or UMAP when umap-learn is installed; in a
        collection of several scripts (Korean and English), each script's mean is removed first so
        that the map groups meanings rather than languages."""
        target = await named(name)
        parsed = parse(MapRequest, await read_body(request, settings.max_body_bytes))
        check_filter(parsed.filter)
        if parsed.method == "umap" and not umap_available():
            raise APIError(
                400, "method 'umap' needs umap-learn on the server (pip install umap-learn)", "method"
            )
        if parsed.method == "umap" and parsed.limit > MAX_UMAP_POINTS:
            message = f"method 'umap' maps at most {MAX_UMAP_POINTS} documents ('limit'); use 'pca' for more"
            raise APIError(400, message, "limit")
        docs, vectors = await target.read(lambda c: c.sample(parsed.limit, parsed.filter), gate, request)
        wanted = "pca" if parsed.method == "auto" and len(docs) > MAX_UMAP_POINTS else parsed.method
        # Each script's vectors centred first: Korean and English of one topic land together.
        groups = script_groups([d.text for d in docs])
        coords, method = await gate.run(lambda _: project_2d(vectors, wanted, groups=groups), request)
        return {
            "object": "map",
            "method": method,
            "points": [
                {"id": d.id, "text": d.text, "metadata": d.metadata, "x": float(x), "y": float(y)}
                for d, (x, y) in zip(docs, coords.tolist(), strict=True)
            ],
        }
