"""Turn a validated embeddings request into a response: check the inputs, encode, format."""

from __future__ import annotations

import asyncio
import base64
import math
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from .._util import tracing
from .._util.tracing import span
from ..encoders.dense.encoder import SentenceEncoder
from ..encoders.whole_text import WholeTextEncoder
from .batcher import DynamicBatcher, QueueFullError
from .errors import APIError
from .inputs import check_count, is_blank
from .schemas import Embedding, EmbeddingRequest, EmbeddingResponse, Usage
from .settings import ServerSettings

if TYPE_CHECKING:
    from .compute import ComputeGate


def request_texts(
    request: EmbeddingRequest, encoder: WholeTextEncoder, settings: ServerSettings
) -> list[str]:
    """The texts to encode: strings as given, token-id lists decoded with the model's tokenizer.

    Raises APIError (400, naming `input` or `input[i]`) for empty input, too many inputs, an empty
    item, a token id outside the vocabulary, or a text over `max_chars_per_input`.
    """
    raw = request.input
    if isinstance(raw, str):
        items: list[Any] = [raw]
    elif raw and all(isinstance(x, int) for x in raw):
        items = [raw]  # one list of token ids
    else:
        items = list(raw)
    check_count(items, "input", settings.max_inputs_per_request)
    texts: list[str] = []
    for i, item in enumerate(items):
        param = "input" if isinstance(raw, str) or items[0] is raw else f"input[{i}]"
        if not item:
            raise APIError(400, f"'{param}' must not be empty", param, "empty_input")
        if isinstance(item, list):
            try:
                item = encoder.decode_ids(item)
            except ValueError as e:
                raise APIError(400, f"'{param}': {e}", param) from None
        if is_blank(item):
            raise APIError(400, f"'{param}' has no visible character", param, "empty_input")
        if len(item) > settings.max_chars_per_input:
            raise APIError(
                400,
                f"'{param}' has {len(item)} characters, over the limit of {settings.max_chars_per_input}",
                param,
                "input_too_long",
            )
        texts.append(item)
    return texts


def check_options(
    request: EmbeddingRequest, encoder: WholeTextEncoder, settings: ServerSettings | None = None
) -> None:
    """400 naming `dimensions`, `prompt_name` or `instruction` when the model cannot honour them."""
    if request.instruction is not None:
        if request.prompt_name is not None:
            raise APIError(400, "send 'instruction' or 'prompt_name', not both", "instruction")
        if is_blank(request.instruction):  # NULs and zero-width characters only, as the rerank route
            raise APIError(400, "'instruction' must not be empty", "instruction", "empty_input")
        limit = settings.max_chars_per_input if settings is not None else None
        if limit is not None and len(request.instruction) > limit:
            message = f"'instruction' has {len(request.instruction)} characters, over the limit of {limit}"
            raise APIError(400, message, "instruction", "input_too_long")
    dim = encoder.get_embedding_dimension()
    if request.dimensions is not None and not 1 <= request.dimensions <= dim:
        raise APIError(400, f"'dimensions' must be between 1 and {dim}", "dimensions")
    if request.prompt_name is not None and request.prompt_name not in encoder.prompts:
        known = ", ".join(sorted(encoder.prompts)) or "none"
        raise APIError(
            400, f"unknown prompt_name {request.prompt_name!r}; this model's prompts: {known}", "prompt_name"
        )


def tokenize_inputs(
    encoder: SentenceEncoder,
    texts: list[str],
    prompt_name: str | None,
    truncate: bool,
    single: bool,
    instruction: str | None = None,
) -> tuple[dict[str, list[list[int]]], int]:
    """Token ids of `texts` as the model reads them (prompt added, cut at the limit with
    `truncate`) and the prompt's length; with `truncate=False`, 400 naming the first input over
    the model's limit. The ids are counted for `usage` and handed to the model as they are."""
    encoded, prompt_length = encoder.token_ids(
        texts, prompt_name=prompt_name, truncate=truncate, prompt=instruction
    )
    if not truncate:
        for i, ids in enumerate(encoded["input_ids"]):
            if len(ids) > encoder.max_seq_length:
                param = "input" if single else f"input[{i}]"
                raise APIError(
                    400,
                    f"'{param}' has {len(ids)} tokens, over the model's limit of {encoder.max_seq_length}; "
                    "shorten it or send truncate=true",
                    param,
                    "input_too_long",
                )
    return encoded, prompt_length


def encode_vector(vector: np.ndarray, encoding_format: str) -> list[float] | str:
    """A float list, or little-endian float32 bytes in base64 (OpenAI's `base64` format)."""
    if encoding_format == "base64":
        return base64.b64encode(np.ascontiguousarray(vector, dtype="<f4").tobytes()).decode("ascii")
    values: list[float] = vector.astype(np.float32).tolist()
    return values


@dataclass
class PreparedRequest:
    """A validated request, tokenized once: ids for the model, encode options, the usage count."""

    encoded: dict[str, list[list[int]]]
    options: dict[str, Any]
    tokens: int


def prepare(request: EmbeddingRequest, encoder: SentenceEncoder, settings: ServerSettings) -> PreparedRequest:
    """Check the inputs and options (APIError naming the field) and tokenize them."""
    texts = request_texts(request, encoder, settings)
    check_options(request, encoder, settings)
    single = isinstance(request.input, str) or (len(texts) == 1 and isinstance(request.input[0], int))
    encoded, prompt_length = tokenize_inputs(
        encoder, texts, request.prompt_name, request.truncate, single, request.instruction
    )
    options: dict[str, Any] = {
        "prompt_length": prompt_length,
        "truncate_dim": request.dimensions,
        "normalize_embeddings": request.dimensions is not None and encoder.normalizes,
    }
    return PreparedRequest(encoded, options, sum(len(ids) for ids in encoded["input_ids"]))


def embed_whole_texts(
    request: EmbeddingRequest, name: str, encoder: WholeTextEncoder, settings: ServerSettings
) -> EmbeddingResponse:
    """Texts through a model with no token-id path to batch (CLIP, a static model, word2vec): checked
    as any request, then encoded whole (cut at the model's limit; `truncate=false` is refused past
    it). Usage counts the model's length unit (`input_lengths`), up to its limit."""
    texts = request_texts(request, encoder, settings)
    check_options(request, encoder, settings)
    prompt = request.instruction
    if prompt is None:
        prompt = encoder.prompts.get(request.prompt_name or encoder.default_prompt_name or "", "")
    lengths = encoder.input_lengths([prompt + t for t in texts])
    if not request.truncate and max(lengths) > encoder.max_seq_length:
        i = max(range(len(lengths)), key=lengths.__getitem__)
        message = f"'input[{i}]' has length {lengths[i]}, over the model's limit of {encoder.max_seq_length}"
        raise APIError(400, message, f"input[{i}]", "input_too_long")
    vectors = encoder.encode(
        texts,
        prompt_name=request.prompt_name,
        prompt=request.instruction,
        truncate_dim=request.dimensions,
        normalize_embeddings=request.dimensions is not None and encoder.normalizes,
    )
    tokens = sum(min(n, encoder.max_seq_length) for n in lengths)
    return respond(request, name, np.asarray(vectors), tokens)


def respond(request: EmbeddingRequest, name: str, vectors: np.ndarray, tokens: int) -> EmbeddingResponse:
    """OpenAI's response shape, vectors as floats or base64."""
    data = [
        Embedding(index=i, embedding=encode_vector(v, request.encoding_format)) for i, v in enumerate(vectors)
    ]
    return EmbeddingResponse(data=data, model=name, usage=Usage(prompt_tokens=tokens, total_tokens=tokens))


# Responses with more rows than this are formatted in a worker thread, not on the event loop.
INLINE_RESPONSE_ROWS = 64


RETRY_AFTER_S = 1
POLL_S = 0.1


T = TypeVar("T")


async def wait_for_client(future: Future[T], http: Request | None, deadline: float) -> T:
    """The future's vectors; cancelled (so its rows are never encoded) once `deadline` (event-loop
    time) passes or the client disconnects, answering 503 or 400."""
    loop = asyncio.get_running_loop()
    waiting = asyncio.wrap_future(future)
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            waiting.cancel()
            raise APIError(503, "the request ran past its deadline", None, "deadline_exceeded", retry_after())
        done, _ = await asyncio.wait({waiting}, timeout=min(POLL_S, remaining))
        if done:
            if waiting.cancelled():  # dropped from a queue once its deadline passed
                raise APIError(
                    503, "the request ran past its deadline", None, "deadline_exceeded", retry_after()
                )
            return waiting.result()
        if http is not None and await http.is_disconnected():
            waiting.cancel()
            raise APIError(400, "the client disconnected", None, "client_disconnected")


def retry_after(seconds: float = RETRY_AFTER_S) -> dict[str, str]:
    """The Retry-After header: whole seconds, at least one."""
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


async def embed_batched(
    request: EmbeddingRequest,
    name: str,
    encoder: WholeTextEncoder,
    settings: ServerSettings,
    batcher: DynamicBatcher | None,
    gate: ComputeGate,
    http: Request | None = None,
) -> EmbeddingResponse:
    """Validate, encode and format one request, sharing model batches with concurrent requests.

    A model served without a batcher (one that encodes whole texts: CLIP, static, word2vec) is
    checked and encoded in one job under `gate`, bounded as the other computing routes are.

    Validation and tokenization run in a worker thread, and the wait for the batcher holds no
    thread, so every waiting request is in the batcher's queue rather than queued for a thread.
    A full queue is a 503 with Retry-After at once; a request past `settings.request_timeout_s`, or
    whose client (`http`) has gone, is dropped from the queue."""
    if batcher is None:
        return await gate.run(lambda _: embed_whole_texts(request, name, encoder, settings), http)
    model = batcher.encoder
    deadline = asyncio.get_running_loop().time() + settings.request_timeout_s
    with span("tokenize", model=name):
        prepared = await run_in_threadpool(prepare, request, model, settings)
    marks: list[int] = []  # traced: when the request was queued, and when its first batch began
    traced = tracing.TRACER is not None
    if traced:
        marks.append(time.time_ns())
    try:
        future = batcher.submit_tokenized(
            prepared.encoded,
            deadline=deadline,
            on_start=(lambda: marks.append(time.time_ns())) if traced else None,
            **prepared.options,
        )
    except QueueFullError as e:
        raise APIError(
            503, f"the model is busy: {e}", None, "queue_full", retry_after(e.retry_after)
        ) from None
    vectors = await wait_for_client(future, http, deadline)
    if len(marks) == 2:
        rows = len(prepared.encoded["input_ids"])
        tracing.record("queue_wait", marks[0], marks[1], model=name, rows=rows)
        tracing.record("encode", marks[1], time.time_ns(), model=name, rows=rows, tokens=prepared.tokens)
    if len(vectors) > INLINE_RESPONSE_ROWS:
        return await run_in_threadpool(respond, request, name, vectors, prepared.tokens)
    return respond(request, name, vectors, prepared.tokens)
