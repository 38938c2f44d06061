"""`munjang mcp`: the MCP tools over stdio, for an agent that starts munjang itself (Claude Desktop,
an IDE, an agent framework): list collections, search, fetch a document, add documents, embed.

It serves the collections of `--collections-dir` (and each `--collection`) with the same limits as
`munjang serve`; `--read-only` leaves out writing (the add tool answers 403). `munjang serve` offers
the same tools over HTTP at /mcp, behind its keys.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from .options import DeviceOption

app = typer.Typer()


@app.command("mcp")
def mcp(
    collections_dir: Annotated[
        Path | None, typer.Option(help="Serve every collection in this folder.")
    ] = None,
    collection: Annotated[
        list[Path] | None, typer.Option(help="A collection folder to serve (repeatable).")
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            "-m",
            help="Model for the embed tool (and for collections of that model), NAME=PATH or a name "
            "(repeatable; default: multilingual-e5-small).",
        ),
    ] = None,
    read_only: Annotated[bool, typer.Option(help="Offer no writing: add_documents answers 403.")] = False,
    device: DeviceOption = None,
) -> None:
    """Serve the MCP tools over stdio (JSON-RPC on stdin/stdout; logs on stderr)."""
    from .._util.extras import require

    require("mcp")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from ..access.grants import FULL, Grant
    from ..models import DEFAULT_SERVE_MODELS
    from ..server import ServerSettings
    from ..server.mcp_server import ServedParts, build_mcp
    from ..server.served_models import load_served_model
    from .serve import _named_models

    if collections_dir is not None and not collections_dir.is_dir():
        raise ValueError(f"--collections-dir {collections_dir}: no such folder")
    encoders = {
        name: load_served_model(path, device=device)
        for name, path in _named_models(model, DEFAULT_SERVE_MODELS[:1])
    }
    settings = ServerSettings(
        models=encoders,
        collection_paths={Path(p).name: Path(p) for p in collection or []},
        collections_dir=collections_dir,
    )
    grant = Grant("stdio", frozenset({"read"})) if read_only else Grant("stdio", FULL.scopes)
    parts = ServedParts.open(settings)
    try:
        build_mcp(parts, lambda _: grant).run("stdio")
    finally:
        parts.close()
