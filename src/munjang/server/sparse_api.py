"""POST /v1/sparse_embeddings: sparse (SPLADE) vectors from a model served with `--sparse-model`.

Body: `{"input": text | [texts], "model": name, "task": "query" | "document", "top_k": N,
"return_tokens": false, "truncate": true}` -> `{"object": "list", "model", "data": [{"object":
"sparse_embedding", "index", "indices": [token ids], "values": [weights], "tokens": [...]?}]}`,
one entry per input in input order, indices ascending (by weight, highest first, when `top_k` keeps
only the N largest). `task` picks the model's query or document side (an inference-free model
answers queries without its transformer); without it the model's default side answers.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from starlette.concurrency import run_in_threadpool

from ..encoders.classical.terms import TermEncoder
from ..encoders.m3.views import M3SparseView
from ..encoders.sparse.encoder import SparseEncoder, sparse_rows
from .errors import APIError
from .schemas import Text
from .settings import ServerSettings
from .text_api import body_schema, non_empty, parse


class SparseEmbeddingRequest(BaseModel):
    """POST /v1/sparse_embeddings body."""

    model_config = ConfigDict(extra="ignore")
    input: Text | list[Text] = Field(description="A text or texts.")
    model: StrictStr | None = Field(default=None, description="A served sparse model (default: the first).")
    task: Literal["query", "document"] | None = Field(default=None, description="The query or document side.")
    top_k: StrictInt | None = Field(default=None, description="Keep each vector's N largest weights.")
    return_tokens: StrictBool = Field(default=False, description="Also give each index's token text.")
    truncate: StrictBool = Field(default=True, description="Cut inputs at the model's token limit.")


def sparse_data(
    model: SparseEncoder | M3SparseView | TermEncoder, texts: list[str], request: SparseEmbeddingRequest
) -> list[dict[str, Any]]:
    """Each text's non-zero entries; off the event loop (the model runs here)."""
    encode = {"query": model.encode_query, "document": model.encode_document}.get(
        request.task or "", model.encode
    )
    vectors = encode(texts, max_active_dims=request.top_k, truncate=request.truncate)
    out = []
    for index, (ids, values) in enumerate(sparse_rows(vectors)):
        if request.top_k is not None:
            order = values.argsort(kind="stable")[::-1]
            ids, values = ids[order], values[order]
        item: dict[str, Any] = {
            "object": "sparse_embedding",
            "index": index,
            "indices": ids.tolist(),
            "values": [float(v) for v in values],
        }
        if request.return_tokens:
            item["tokens"] = model.tokenizer.convert_ids_to_tokens(ids.tolist())
        out.append(item)
    return out


def add_sparse_routes(router: APIRouter, settings: ServerSettings, read_body: Any) -> None:
    """Register POST /v1/sparse_embeddings on the (key-protected) /v1 router."""

    @router.post("/sparse_embeddings", openapi_extra=body_schema(SparseEmbeddingRequest))
    async def sparse_embeddings(request: Request) -> dict[str, Any]:
        """Sparse vectors (token ids and weights) of the inputs, from a served SPLADE model."""
        parsed = parse(SparseEmbeddingRequest, await read_body(request, settings.max_body_bytes))
        if not settings.sparse_models:
            raise APIError(404, "no sparse model is served here; start with --sparse-model", "model")
        name = parsed.model or next(iter(settings.sparse_models))
        model = settings.sparse_models.get(name)
        if model is None:
            served = ", ".join(settings.sparse_models)
            raise APIError(404, f"sparse model {name!r} is not served here; served: {served}", "model")
        texts = [parsed.input] if isinstance(parsed.input, str) else list(parsed.input)
        non_empty(texts, "input", settings)
        if parsed.top_k is not None and parsed.top_k < 1:
            raise APIError(400, "'top_k' must be at least 1", "top_k")
        data = await run_in_threadpool(sparse_data, model, texts, parsed)
        return {"object": "list", "model": name, "data": data}
