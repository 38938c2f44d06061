"""POST /v1/multi_vector_embeddings and /v1/multi_vector_similarity: late-interaction (ColBERT) models
served with `munjang serve --multi-vector-model PATH`.

- multi_vector_embeddings: `{"input": text | [texts], "input_type": "query" | "document", "model"}` ->
  `{"object": "list", "model", "data": [{"object": "multi_vector_embedding", "index", "embedding":
  [[...], ...]}], "usage": {"prompt_tokens", "total_tokens"}}`: one unit vector per scored token.
  The response is bounded: past `max_multi_vector_values` numbers (tokens x dimension, over all
  inputs) the request is refused with 413 before anything is encoded past the limit.
- multi_vector_similarity: `{"query", "documents": [...], "model"}` -> `{"model", "scores": [...]}`,
  the MaxSim of the query with each document.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, StrictStr
from starlette.concurrency import run_in_threadpool

from ..encoders.m3.views import M3MultiVectorView
from ..encoders.multi_vector import MultiVectorEncoder
from .errors import APIError
from .schemas import Text
from .settings import ServerSettings
from .text_api import body_schema, non_empty, non_empty_text, parse


class MultiVectorRequest(BaseModel):
    """POST /v1/multi_vector_embeddings body."""

    model_config = ConfigDict(extra="ignore")
    input: Text | list[Text]
    input_type: Literal["query", "document"] = "document"
    model: StrictStr | None = None


class MultiVectorSimilarityRequest(BaseModel):
    """POST /v1/multi_vector_similarity body."""

    model_config = ConfigDict(extra="ignore")
    query: Text
    documents: list[Text]
    model: StrictStr | None = None


def encode_bounded(
    model: MultiVectorEncoder | M3MultiVectorView, texts: list[str], task: str, limit: int
) -> tuple[list[np.ndarray], int]:
    """Token matrices of `texts`, refusing with 413 once their values would pass `limit`."""
    out: list[np.ndarray] = []
    total = 0
    for start in range(0, len(texts), 32):
        part = texts[start : start + 32]
        matrices = model.encode_query(part) if task == "query" else model.encode_document(part)
        assert isinstance(matrices, list)
        total += sum(m.size for m in matrices)
        if total > limit:
            message = (
                f"'input' makes more than {limit:,} numbers of token vectors, over the limit per request"
            )
            raise APIError(413, message, "input", "response_too_large")
        out.extend(matrices)
    return out, sum(m.shape[0] for m in out)


def add_multi_vector_routes(router: APIRouter, settings: ServerSettings, read_body: Any) -> None:
    """Register the multi-vector routes on the (key-protected) /v1 router."""

    def model_named(name: str | None) -> tuple[str, MultiVectorEncoder | M3MultiVectorView]:
        served = settings.multi_vector_models
        if not served:
            raise APIError(
                404, "no multi-vector model is served here; start with --multi-vector-model", "model"
            )
        name = name or next(iter(served))
        model = served.get(name)
        if model is None:
            raise APIError(
                404, f"multi-vector model {name!r} is not served here; served: {', '.join(served)}", "model"
            )
        return name, model

    @router.post("/multi_vector_embeddings", openapi_extra=body_schema(MultiVectorRequest))
    async def multi_vector_embeddings(request: Request) -> dict[str, Any]:
        """Per-token unit vectors of each input (a query or a document), for late interaction."""
        parsed = parse(MultiVectorRequest, await read_body(request, settings.max_body_bytes))
        texts = [parsed.input] if isinstance(parsed.input, str) else list(parsed.input)
        non_empty(texts, "input", settings)
        name, model = model_named(parsed.model)
        limit = settings.max_multi_vector_values
        matrices, tokens = await run_in_threadpool(encode_bounded, model, texts, parsed.input_type, limit)
        data = [
            {"object": "multi_vector_embedding", "index": i, "embedding": m.tolist()}
            for i, m in enumerate(matrices)
        ]
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return {"object": "list", "model": name, "data": data, "usage": usage}

    @router.post("/multi_vector_similarity", openapi_extra=body_schema(MultiVectorSimilarityRequest))
    async def multi_vector_similarity(request: Request) -> dict[str, Any]:
        """MaxSim of a query with each document."""
        parsed = parse(MultiVectorSimilarityRequest, await read_body(request, settings.max_body_bytes))
        non_empty_text(parsed.query, "query", settings)
        non_empty(parsed.documents, "documents", settings)
        name, model = model_named(parsed.model)

        def score() -> list[float]:
            query = model.encode_query([parsed.query])
            documents = model.encode_document(parsed.documents)
            return [float(s) for s in model.similarity(query, documents)[0]]

        return {"model": name, "scores": await run_in_threadpool(score)}
