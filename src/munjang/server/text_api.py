"""POST /v1/similarity, /v1/tokenize and /v1/rerank, in text-embeddings-inference's and Cohere's shapes.

- similarity (TEI): `{"inputs": {"source_sentence": s, "sentences": [...]}}` -> one score per sentence,
  the model's similarity function between the source and each sentence.
- tokenize (TEI): `{"inputs": text | [texts], "add_special_tokens": true}` -> per text, its tokens
  as `{"id", "text", "special", "start", "stop"}` (character offsets into the text).
- rerank (TEI / Cohere): `{"query", "texts" | "documents", "top_n", "return_documents"}` ->
  `{"model", "results": [{"index", "relevance_score", "document": {"text"}}]}`, best first, scored
  by a served cross-encoder.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import numpy as np
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError
from starlette.concurrency import run_in_threadpool

from ..encoders.cross import CrossEncoder
from ..encoders.dense.encoder import SentenceEncoder
from ..encoders.whole_text import WholeTextEncoder
from .batcher import DynamicBatcher, QueueFullError
from .compute import CancelToken, ComputeGate
from .embed import retry_after, wait_for_client
from .errors import APIError, validation_error
from .inputs import check_count, is_blank
from .schemas import Text
from .served_models import ServedModel
from .settings import ServerSettings


class SimilarityInputs(BaseModel):
    source_sentence: Text
    sentences: list[Text]


class SimilarityRequest(BaseModel):
    """POST /v1/similarity body."""

    model_config = ConfigDict(extra="ignore")
    inputs: SimilarityInputs
    model: StrictStr | None = None
    prompt_name: StrictStr | None = None


class TokenizeRequest(BaseModel):
    """POST /v1/tokenize body."""

    model_config = ConfigDict(extra="ignore")
    inputs: Text | list[Text]
    add_special_tokens: StrictBool = True
    model: StrictStr | None = None


class RerankRequest(BaseModel):
    """POST /v1/rerank body: `texts` (TEI) or `documents` (Cohere; strings or `{"text": ...}`)."""

    model_config = ConfigDict(extra="ignore")
    query: Text
    texts: list[Text] | None = None
    documents: list[Text | dict[str, Text]] | None = None
    top_n: StrictInt | None = Field(default=None, description="Keep the best N (default: all).")
    return_documents: StrictBool = False
    model: StrictStr | None = None
    instruction: Text | None = Field(
        default=None, description="The reranker's task (an LLM reranker reads it as its system prompt)."
    )


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """OpenAPI `requestBody` for a route that reads its body itself (to enforce the size limit)."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": model.model_json_schema()}},
        }
    }


def parse(model: type[BaseModel], body: bytes) -> Any:
    try:
        return model.model_validate_json(body)
    except ValidationError as e:
        raise validation_error(list(e.errors())) from None


def non_empty(texts: list[str], param: str, settings: ServerSettings) -> None:
    """400 naming the field for an empty list, an empty item, too many items or an over-long item."""
    check_count(texts, param, settings.max_inputs_per_request)
    for i, text in enumerate(texts):
        if is_blank(text):
            raise APIError(400, f"'{param}[{i}]' must not be empty", f"{param}[{i}]", "empty_input")
        if len(text) > settings.max_chars_per_input:
            raise APIError(
                400,
                f"'{param}[{i}]' has {len(text)} characters, over the limit",
                f"{param}[{i}]",
                "input_too_long",
            )


def non_empty_text(text: str, param: str, settings: ServerSettings) -> None:
    """400 naming `param` for an empty or over-long single text."""
    if is_blank(text):
        raise APIError(400, f"'{param}' must not be empty", param, "empty_input")
    if len(text) > settings.max_chars_per_input:
        raise APIError(400, f"'{param}' has {len(text)} characters, over the limit", param, "input_too_long")


def similarity_scores(encoder: WholeTextEncoder, request: SimilarityRequest) -> list[float]:
    """Scores of a whole-text model (CLIP, static, word2vec), encoded in one call."""
    texts = [request.inputs.source_sentence, *request.inputs.sentences]
    vectors = encoder.encode(texts, prompt_name=request.prompt_name, show_progress_bar=False)
    return scores_of(encoder, np.asarray(vectors))


def scores_of(encoder: WholeTextEncoder, vectors: np.ndarray) -> list[float]:
    """The model's similarity between the first vector and each of the others."""
    scores = np.asarray(encoder.similarity(vectors[:1], vectors[1:]))[0]
    return [float(s) for s in scores]


# Documents scored between two checks of a rerank's cancel token: a departed client's rerank stops
# after at most this many more pairs.
RERANK_STEP = 32


def rerank_hits(
    cross: CrossEncoder,
    query: str,
    docs: list[str],
    top_n: int | None,
    token: CancelToken,
    prompt: str | None = None,
) -> list[dict[str, Any]]:
    """`cross.rank` over `docs` in steps of RERANK_STEP, stopping when `token` is cancelled: the same
    scores and order (best first, ties in input order)."""
    scores = np.zeros(len(docs), dtype=np.float64)
    for start in range(0, len(docs), RERANK_STEP):
        token.check()
        chunk = docs[start : start + RERANK_STEP]
        for hit in cross.rank(query, chunk, show_progress_bar=False, prompt=prompt):
            scores[start + hit["corpus_id"]] = hit["score"]
    order = np.argsort(-scores, kind="stable")[:top_n]
    return [{"corpus_id": int(i), "score": float(scores[i])} for i in order]


def tokens_json(encoder: SentenceEncoder, texts: list[str], special: bool, limit: int) -> bytes:
    """Each text's tokens (id, text, special, character offsets) as JSON bytes, built off the event
    loop; 413 naming `inputs` past `limit` tokens (a response is ~60 bytes per token: unbounded, a
    few MB of text became 100 MB)."""
    tokenizer = encoder.tokenizer
    encoded = tokenizer(texts, add_special_tokens=special, return_offsets_mapping=True, truncation=False)
    count = sum(len(ids) for ids in encoded["input_ids"])
    if count > limit:
        message = f"'inputs' make {count:,} tokens, over the limit of {limit:,} per request"
        raise APIError(413, message, "inputs", "response_too_large")
    specials = set(tokenizer.all_special_ids)
    out = [
        [
            {"id": i, "text": tok, "special": i in specials, "start": start, "stop": stop}
            for i, tok, (start, stop) in zip(ids, tokenizer.convert_ids_to_tokens(ids), offsets, strict=True)
        ]
        for ids, offsets in zip(encoded["input_ids"], encoded["offset_mapping"], strict=True)
    ]
    return json.dumps(out, ensure_ascii=False).encode("utf-8")


def add_text_routes(
    router: APIRouter,
    settings: ServerSettings,
    read_body: Any,
    batchers: dict[str, DynamicBatcher],
    gate: ComputeGate,
) -> None:
    """Register the similarity, tokenize and rerank routes on the (key-protected) /v1 router. Each
    is bounded as /v1/embeddings is: similarity shares the model's batcher (its queue bound,
    deadline and cancellation), the others run through `gate`."""

    def encoder_named(name: str | None) -> tuple[str, ServedModel]:
        name = name or settings.default_model
        encoder = settings.models.get(name)
        if encoder is None:
            raise APIError(
                404, f"model {name!r} is not served here; served: {', '.join(settings.models)}", "model"
            )
        return name, encoder

    @router.post("/similarity", response_model=list[float], openapi_extra=body_schema(SimilarityRequest))
    async def similarity(request: Request) -> list[float]:
        """Similarity of a source sentence to each of several sentences (TEI's /similarity)."""
        parsed = parse(SimilarityRequest, await read_body(request, settings.max_body_bytes))
        non_empty_text(parsed.inputs.source_sentence, "inputs.source_sentence", settings)
        non_empty(parsed.inputs.sentences, "inputs.sentences", settings)
        name, encoder = encoder_named(parsed.model)
        if parsed.prompt_name is not None and parsed.prompt_name not in encoder.prompts:
            raise APIError(400, f"unknown prompt_name {parsed.prompt_name!r}", "prompt_name")
        batcher = batchers.get(name)
        if batcher is None:  # a model that encodes whole texts
            return await gate.run(lambda _: similarity_scores(encoder, parsed), request)
        deadline = asyncio.get_running_loop().time() + settings.request_timeout_s
        texts = [parsed.inputs.source_sentence, *parsed.inputs.sentences]
        encoded, prompt_length = await run_in_threadpool(
            batcher.encoder.token_ids, texts, prompt_name=parsed.prompt_name, truncate=True
        )
        try:
            future = batcher.submit_tokenized(encoded, prompt_length=prompt_length, deadline=deadline)
        except QueueFullError as e:
            raise APIError(
                503, f"the model is busy: {e}", None, "queue_full", retry_after(e.retry_after)
            ) from None
        vectors = await wait_for_client(future, request, deadline)
        return scores_of(encoder, vectors)

    @router.post("/tokenize", openapi_extra=body_schema(TokenizeRequest))
    async def tokenize(request: Request) -> Response:
        """The model's tokens of each input, with ids and character offsets (TEI's /tokenize)."""
        parsed = parse(TokenizeRequest, await read_body(request, settings.max_body_bytes))
        texts = [parsed.inputs] if isinstance(parsed.inputs, str) else list(parsed.inputs)
        non_empty(texts, "inputs", settings)
        name, encoder = encoder_named(parsed.model)
        if not isinstance(encoder, SentenceEncoder):
            raise APIError(
                400, f"model {name!r} reads text, not token ids: it has no tokens to show", "model"
            )
        limit = settings.max_tokenize_tokens
        body = await gate.run(
            lambda _: tokens_json(encoder, texts, parsed.add_special_tokens, limit), request
        )
        return Response(body, media_type="application/json")

    @router.post("/rerank", openapi_extra=body_schema(RerankRequest))
    async def rerank(request: Request) -> dict[str, Any]:
        """Documents ordered by a cross-encoder's relevance to the query (TEI / Cohere rerank)."""
        parsed = parse(RerankRequest, await read_body(request, settings.max_body_bytes))
        if not settings.rerankers:
            raise APIError(404, "no reranker (cross-encoder) is served here; start with --reranker", "model")
        name = parsed.model if parsed.model in settings.rerankers else None
        if parsed.model is not None and name is None:
            served = ", ".join(settings.rerankers)
            raise APIError(404, f"reranker {parsed.model!r} is not served here; served: {served}", "model")
        name = name or next(iter(settings.rerankers))
        if parsed.texts is not None and parsed.documents is not None:
            raise APIError(400, "send 'texts' or 'documents', not both", "documents")
        raw = parsed.texts if parsed.texts is not None else parsed.documents
        param = "texts" if parsed.texts is not None else "documents"
        if raw is None:
            raise APIError(422, "'documents' (or 'texts') is required", "documents", "missing_field")
        docs = [d if isinstance(d, str) else d.get("text", "") for d in raw]
        non_empty_text(parsed.query, "query", settings)
        non_empty(docs, param, settings)
        if parsed.top_n is not None and parsed.top_n < 1:
            raise APIError(400, "'top_n' must be at least 1", "top_n")
        if parsed.instruction is not None:
            non_empty_text(parsed.instruction, "instruction", settings)
        cross = settings.rerankers[name]
        hits = await gate.run(
            lambda token: rerank_hits(cross, parsed.query, docs, parsed.top_n, token, parsed.instruction),
            request,
        )
        results = []
        for hit in hits:
            item: dict[str, Any] = {"index": hit["corpus_id"], "relevance_score": hit["score"]}
            if parsed.return_documents:
                item["document"] = {"text": docs[hit["corpus_id"]]}
            results.append(item)
        return {"model": name, "results": results}
