"""`munjang serve`: the HTTP server over the named models, rerankers and collections."""

from __future__ import annotations

import functools
import importlib.util
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from .options import BackendOption, DeviceOption, PrecisionOption, ThreadsOption

app = typer.Typer()

SWITCH_INTERVAL_S = 0.001  # the interpreter-lock switch interval while serving (Python: 0.005)


def _default_model_processes(encoders: dict[str, Any]) -> int:
    """On a CPU, none: the model runs in the server's process on all its threads. A model process
    holds a whole copy of the weights and compiled graphs (1.66 GB of PSS for multilingual-e5-small
    on OpenVINO, bench/footprint.py) for about a tenth more throughput under saturating load (the
    server-load rows of docs/benchmarks.md: 0.87x against 0.79x of in-process encoding), so a
    laptop's server keeps one copy; `--model-processes 2` buys the throughput. One on a GPU."""
    if any(e.device.type != "cpu" for e in encoders.values()):
        return 1
    return 0


def _named_models(
    models: list[str] | None, default: tuple[str, ...] = ("all-MiniLM-L6-v2",)
) -> list[tuple[str, str]]:
    """`--model` values as (served name, model name, folder or hub id): `name=path` names it; otherwise
    a folder's name, or the value as given (a model name or hub id). No value serves `default`."""
    named: list[tuple[str, str]] = []
    values: list[str] = list(models) if models else list(default)
    for value in values:
        if "=" in value:
            name, _, path = value.partition("=")
            if not name or not path:
                raise ValueError(f"--model {value!r}: use NAME=PATH or PATH")
            named.append((name, path))
        else:
            folder = Path(value)
            named.append((folder.name if folder.is_dir() else value, value))
    names = [name for name, _ in named]
    if len(set(names)) != len(names):
        raise ValueError(f"two --model values are served under the same name: {names}")
    return named


@app.command()
def serve(
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            "-m",
            help="Model name, folder or hub id, or NAME=PATH (repeat to serve several; the first is the "
            "default). Default: multilingual-e5-small (Korean-capable; pulled on first use) and "
            "all-MiniLM-L6-v2.",
        ),
    ] = None,
    host: Annotated[
        str, typer.Option(help="Address to listen on (0.0.0.0 exposes the server).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8000,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="MUNJANG_API_KEY", help="Require 'Authorization: Bearer KEY' (/health stays open)."
        ),
    ] = None,
    keys: Annotated[
        Path | None,
        typer.Option(
            envvar="MUNJANG_KEYS",
            help="Scoped API keys (`munjang keys create`), read again when the file changes. Default: "
            "keys.json in --collections-dir, if there.",
        ),
    ] = None,
    mcp: Annotated[
        bool | None,
        typer.Option(
            "--mcp/--no-mcp",
            help="Serve the MCP tools at /mcp (streamable HTTP, behind the same keys). Default: on when "
            "the mcp package is installed (munjang[mcp]).",
        ),
    ] = None,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option(
            envvar="MUNJANG_OTLP_ENDPOINT",
            help="Send a trace of each request's stages (tokenize, queue wait, encode, each retriever, "
            "fusion, rerank) to this OTLP/HTTP URL, e.g. http://localhost:4318/v1/traces (munjang[otel]). "
            "Off by default.",
        ),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="Also answer requests with this Host name (repeatable; '*' for any). A loopback server "
            "answers loopback names only, so a DNS-rebinding page cannot reach it.",
        ),
    ] = None,
    allowed_origin: Annotated[
        list[str] | None,
        typer.Option(help="Also serve browser requests from this origin, e.g. https://app.example (repeat)."),
    ] = None,
    device: DeviceOption = None,
    backend: BackendOption = None,
    precision: PrecisionOption = None,
    threads: ThreadsOption = None,
    max_inputs: Annotated[int, typer.Option(min=1, help="Most inputs in one request.")] = 2048,
    max_add_chars: Annotated[
        int,
        typer.Option(
            min=1,
            help="Most characters one request adds to a collection (its documents together, or an "
            "uploaded file's text): each is analysed and encoded, so this bounds a request's CPU time; "
            "past it: 413.",
        ),
    ] = 1_000_000,
    max_queued_tokens: Annotated[
        int, typer.Option(min=1, help="Per model, the most tokens waiting to be encoded; past it: 503.")
    ] = 65_536,
    max_queued_requests: Annotated[
        int, typer.Option(min=1, help="Per model, the most requests waiting to be encoded; past it: 503.")
    ] = 256,
    request_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds an embeddings request may wait and run; then 503.")
    ] = 30.0,
    max_queue_wait: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="Seconds a request may be expected to wait (by the model's measured speed); past it: "
            "503 at once, with Retry-After.",
        ),
    ] = 10.0,
    max_collections: Annotated[int, typer.Option(min=1, help="Most collections served at once.")] = 100,
    max_connections: Annotated[
        int, typer.Option(min=1, help="Most open connections and requests; past it new ones get 503.")
    ] = 1000,
    reranker: Annotated[
        list[str] | None,
        typer.Option(help="Cross-encoder folder or NAME=PATH for POST /v1/rerank (repeatable)."),
    ] = None,
    sparse_model: Annotated[
        list[str] | None,
        typer.Option(
            help="Sparse (SPLADE) model folder or NAME=PATH for POST /v1/sparse_embeddings (repeatable)."
        ),
    ] = None,
    multi_vector_model: Annotated[
        list[str] | None,
        typer.Option(help="Multi-vector (ColBERT) folder or NAME=PATH for /v1/multi_vector_* (repeatable)."),
    ] = None,
    collection: Annotated[
        list[Path] | None, typer.Option(help="A collection folder to serve (repeatable).")
    ] = None,
    collections_dir: Annotated[
        Path | None, typer.Option(help="Serve every collection in this folder and create new ones there.")
    ] = None,
    collections_db: Annotated[
        str | None,
        typer.Option(
            envvar="MUNJANG_COLLECTIONS_DB",
            help="Serve every collection in this PostgreSQL + pgvector database (a postgresql:// URL) "
            "or Qdrant backend (qdrant+local:// or qdrant://) and create new ones there.",
        ),
    ] = None,
    access_log: Annotated[bool, typer.Option(help="Log one line per request.")] = True,
    demo: Annotated[
        bool,
        typer.Option(help="Also serve the bundled demo collection (Korean and English), built on first use."),
    ] = False,
    batch_tokens: Annotated[
        int, typer.Option(min=1, help="Most tokens in one model batch of merged requests.")
    ] = 4096,
    model_processes: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="Processes per model, sharing the cores, each with its own copy of the weights (about 10%% "
            "more throughput under saturating load); default: 0 on a CPU (the model in the server's "
            "own process, one copy), 1 on a GPU.",
        ),
    ] = None,
) -> None:
    """Serve the models over HTTP: OpenAI's embeddings API, similarity, tokenize, rerank, metrics."""
    from .._util.extras import require

    uvicorn = require("uvicorn")
    require("fastapi")
    if mcp:
        require("mcp")
    if otlp_endpoint is not None:
        require("opentelemetry.sdk")
    serve_mcp = mcp if mcp is not None else importlib.util.find_spec("mcp") is not None

    # Requests are tokenized in many threads at once; the tokenizer's own thread pool per call would
    # only fight the model's threads for the cores and lower the throughput under load.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # A search's Python steps wait for the interpreter lock while a write tokenizes or rebuilds BM25
    # on another thread; a shorter switch interval hands it over sooner, so searches beside a long
    # write keep close to their idle time (see docs/benchmarks.md, searches during an add).
    sys.setswitchinterval(SWITCH_INTERVAL_S)

    from ..encoders.cross import load_cross_encoder
    from ..encoders.dense.encoder import SentenceEncoder
    from ..inference.memory import release_freed_memory as release_memory
    from ..models import DEFAULT_SERVE_MODELS
    from ..server import ServerSettings, create_app
    from ..server.backend_choice import BackgroundChoice
    from ..server.protocol import HeaderDeadlineProtocol
    from ..server.served_models import ServedModel, load_served_model

    served = _named_models(model, DEFAULT_SERVE_MODELS)
    encoders: dict[str, ServedModel] = {}
    for name, path in served:
        encoders[name] = load_served_model(
            path, device=device, backend=backend, precision=precision, threads=threads
        )
    # The sentence encoders (a classical word2vec model has no backend, weights or warm-up).
    sentence_encoders = {n: e for n, e in encoders.items() if isinstance(e, SentenceEncoder)}
    # Models whose backend choice is still to be measured serve on torch fp32 until it is made.
    provisional = BackgroundChoice.provisional(sentence_encoders)
    background = BackgroundChoice(provisional)
    for name, encoder in sentence_encoders.items():
        if name in provisional:  # torch compiles nothing: one short call builds what it keeps
            encoder.encode("warm up")
            continue
        encoder.warmup()
        if encoder.release_torch_weights():  # on an exported backend (cached choice): one copy of the weights
            release_memory()
    rerankers = {
        name: load_cross_encoder(str(path), device=device)
        for name, path in (_named_models(reranker) if reranker else [])
    }
    from ..encoders.embedder import load_sparse_embedder

    sparse_models = {
        name: load_sparse_embedder(str(path), device=device)
        for name, path in (_named_models(sparse_model) if sparse_model else [])
    }
    from ..encoders.multi_vector import load_multi_vector_encoder

    multi_vector_models = {
        name: load_multi_vector_encoder(str(path), device=device)
        for name, path in (_named_models(multi_vector_model) if multi_vector_model else [])
    }
    collection_paths = {Path(p).name: Path(p) for p in collection or []}
    builders: dict[str, Callable[[], object]] = {}
    if demo and "demo" not in collection_paths:
        from .._util.paths import cache_root
        from ..applications.demo import demo_collection

        first, source = served[0]
        folder = cache_root() / "demo" / first.replace("/", "--")
        collection_paths["demo"] = folder
        # Built (or checked) on the collection's thread once the server runs: not before the first answer.
        builders["demo"] = functools.partial(demo_collection, folder, encoders[first], model=source)
    settings = ServerSettings(
        models=encoders,
        rerankers=rerankers,
        sparse_models=sparse_models,
        multi_vector_models=multi_vector_models,
        collection_paths=collection_paths,
        collections_dir=collections_dir,
        collections_db=collections_db,
        api_key=api_key,
        keys_file=_keys_file(keys, collections_dir),
        mcp=serve_mcp,
        otlp_endpoint=otlp_endpoint,
        allowed_hosts=tuple(allowed_host or ()),
        allowed_origins=tuple(allowed_origin or ()),
        max_inputs_per_request=max_inputs,
        max_chars_per_add=max_add_chars,
        max_queued_tokens=max_queued_tokens,
        max_queued_requests=max_queued_requests,
        request_timeout_s=request_timeout,
        max_queue_wait_s=max_queue_wait,
        max_collections=max_collections,
        host=host,
        port=port,
        model_processes=(
            _default_model_processes(sentence_encoders) if model_processes is None else model_processes
        ),
        batch_max_tokens=batch_tokens,
        background_choice=background,
        collection_builders=builders,
    )
    web_app = create_app(settings)
    # Bound and listening before the address is printed: a client that follows it at once is
    # queued until the server accepts, never refused.
    listening = listening_socket(host, port)
    shown = f"[{host}]" if ":" in host else host
    docs = "API docs: /docs" if web_app.state.docs else "OpenAPI schema: /openapi.json, with the key"
    typer.echo(f"serving {', '.join(encoders)} at http://{shown}:{port}/v1 ({docs})")
    typer.echo(f"web page: http://{shown}:{port}/")
    if serve_mcp:
        typer.echo(f"MCP (streamable HTTP): http://{shown}:{port}/mcp")
    uvicorn.run(
        web_app,
        fd=listening.fileno(),
        log_level="info",
        access_log=access_log,
        limit_concurrency=max_connections,
        timeout_keep_alive=5,
        http=HeaderDeadlineProtocol,
    )


def _keys_file(keys: Path | None, collections_dir: Path | None) -> Path | None:
    """`--keys`, else `keys.json` in the collections folder when it is there; the file must exist."""
    if keys is None and collections_dir is not None and (collections_dir / "keys.json").is_file():
        return collections_dir / "keys.json"
    if keys is not None and not keys.is_file():
        from ..access import KeyFileError

        raise KeyFileError(f"--keys {keys}: no such file (create a key with `munjang keys create`)")
    return keys


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) and listening, as uvicorn would open it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise typer.BadParameter(f"cannot listen on {host}:{port}: {e.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock
