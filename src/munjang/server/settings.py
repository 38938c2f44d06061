"""What a server serves and the limits it enforces on each request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..encoders.classical.terms import TermEncoder
from ..encoders.cross import CrossEncoder
from ..encoders.dense.encoder import SentenceEncoder
from ..encoders.m3.views import M3MultiVectorView, M3SparseView
from ..encoders.multi_vector import MultiVectorEncoder
from ..encoders.sparse.encoder import SparseEncoder
from .backend_choice import BackgroundChoice
from .served_models import ServedModel


@dataclass
class ServerSettings:
    """Models served by name (the first is the default) and per-request limits.

    `models`: sentence encoders for /v1/embeddings and /v1/similarity. A transformer
    `SentenceEncoder` is tokenized on arrival and encoded in batches shared between requests
    (`batched_models`); a model that encodes whole texts (CLIP, static, a classical word2vec
    encoder: `encoders.whole_text`) is encoded a request at a time under the compute gate.

    `rerankers`: cross-encoders served by /v1/rerank (the first is the default).
    `sparse_models`: sparse (SPLADE) encoders served by /v1/sparse_embeddings (the first is the default).
    `collection_paths` (name -> folder) and every collection inside `collections_dir` are served
    under /v1/collections; new collections are created in `collections_dir`. With `collections_db`
    (a postgresql:// URL) every collection in that PostgreSQL database is served too, and new ones
    are created there.
    `api_key`: when set, every route but /health needs `Authorization: Bearer <api_key>`.
    `keys_file`: scoped keys (`munjang keys`; `munjang.access.keys`), read again when the file
    changes: each key's scopes and collections decide what it may do (`server.access`); `api_key`
    beside it keeps every scope.
    `allowed_hosts` / `allowed_origins`: added to the Host and Origin allow-lists (`server.guard`:
    a server bound to loopback answers loopback Host names only; `*` allows any).
    `batch_max_tokens` / `batch_max_wait_ms`: concurrent requests are merged into model batches of
    up to that many tokens, waiting at most that long for company (see `server.batcher`).
    `max_queued_requests` / `max_queued_tokens`: per model, the most requests and tokens waiting to
    be encoded; past either a request is refused with 503 and Retry-After instead of queuing.
    `max_queue_wait_s`: a request that would wait longer than this (or than its deadline) before its
    work is done, by the measured speed of what it queues behind, is refused at arrival the same way,
    with Retry-After saying when the queue will have drained (`server.batcher`, `server.compute`).
    `request_timeout_s`: a request that computes (embeddings, similarity, rerank, tokenize, search,
    map) still unanswered after this long is dropped (503), as is one whose client has gone, and
    its remaining work is not done. `compute_threads` / `max_queued_compute`: the routes that compute
    outside the embeddings batcher (rerank, tokenize, map) run on that many threads with at most
    that many waiting (503 with Retry-After past it); a collection's searches wait at most
    `max_queued_compute` deep. `max_tokenize_tokens` bounds what
    /v1/tokenize returns; `max_collections` the collections served at once. `max_chars_per_add`:
    the most characters one request adds to a collection (its documents together, or an uploaded
    file's text), refused with 413 before any is analysed or encoded. `max_snapshot_bytes`: a
    snapshot taken, or an archive uploaded to restore, by the snapshot routes (`snapshots_api`).
    `model_processes`: run each model loaded from a folder in that many processes of its own
    (`munjang serve` does; 0 keeps it in this process), so request handling never holds the model
    up, and several batches run side by side; the cores (torch's thread count here) are shared
    out between them. A process loads the folder with the encoder's backend and precision, so
    keep 0 for encoders changed in memory.
    `background_choice`: models served on torch fp32 until their automatic backend choice, measured
    in the background, is made (`munjang serve` does this; see `server.backend_choice`).
    """

    models: dict[str, ServedModel] = field(default_factory=dict)
    rerankers: dict[str, CrossEncoder] = field(default_factory=dict)
    sparse_models: dict[str, SparseEncoder | M3SparseView | TermEncoder] = field(default_factory=dict)
    collection_paths: dict[str, Path] = field(default_factory=dict)
    collections_dir: Path | None = None
    collections_db: str | None = None
    api_key: str | None = None
    keys_file: Path | None = None
    # Export a trace of each request's stages over OTLP/HTTP to this URL (munjang[otel]; `_util.tracing`).
    otlp_endpoint: str | None = None
    # Serve the MCP tools at /mcp (streamable HTTP; needs the `mcp` package: munjang[mcp]).
    mcp: bool = False
    max_inputs_per_request: int = 2048
    max_chars_per_input: int = 100_000
    # Characters one request may add to a collection (all its documents, or an uploaded file's
    # text): adding is analysed and encoded in full, ~0.3 ms of CPU per character for a base-size
    # model on CPU (issue 70: 32 CPU-s for one 100,000-character document), so this bounds a
    # request's CPU time where the body bound alone admits ~80 of those. 1,000,000: ten documents
    # of the longest length, or 2,048 of ~500 characters.
    max_chars_per_add: int = 1_000_000
    max_body_bytes: int = 8_000_000
    host: str = "127.0.0.1"
    port: int = 8000
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    batch_max_tokens: int = 4096
    batch_max_wait_ms: float = 2.0
    model_processes: int = 0
    max_queued_requests: int = 256
    max_queued_tokens: int = 65_536
    request_timeout_s: float = 30.0
    # Below the timeouts clients commonly set (10-30 s; bench/server_overload.py's 15 s): a request
    # expected to wait longer is refused at arrival (503 + Retry-After) rather than answered late.
    max_queue_wait_s: float = 10.0
    compute_threads: int = 2
    max_queued_compute: int = 32
    max_tokenize_tokens: int = 65_536
    max_collections: int = 100
    max_snapshot_bytes: int = 64 << 30
    # Late-interaction (ColBERT) models for /v1/multi_vector_*, and the most numbers one answer holds.
    multi_vector_models: dict[str, MultiVectorEncoder | M3MultiVectorView] = field(default_factory=dict)
    max_multi_vector_values: int = 4_000_000
    background_choice: BackgroundChoice | None = None
    # name -> what builds that collection's folder before it is opened, on its own thread once the
    # server runs: served collections built on first use (the demo) never hold up the first answer.
    collection_builders: dict[str, Callable[[], object]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.models:
            raise ValueError("ServerSettings needs at least one model to serve")

    def batched_models(self) -> dict[str, SentenceEncoder]:
        """The served models with a token-id path (a transformer first): those given a batcher, model
        processes and a backend choice."""
        return {
            name: model
            for name, model in self.models.items()
            if isinstance(model, SentenceEncoder) and not model.encodes_whole_texts
        }

    @property
    def default_model(self) -> str:
        """The name of the first model, used when a request names none."""
        return next(iter(self.models))
