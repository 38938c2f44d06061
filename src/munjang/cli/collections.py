"""`munjang index list` and `munjang index drop`: the collections in one place, and deleting one.

`list` names the collections in a folder of collection folders (`--dir`, default the current
folder) or in a database (`--backend URL`: PostgreSQL or Qdrant). `drop` deletes one collection and
everything it holds; it asks first unless `--yes`, and refuses (one `error:` line, nothing removed)
while another process writes to the collection or when the folder is not a munjang collection.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from ..errors import MunjangError
from .index import BackendOption, FolderArgument

DirOption = Annotated[
    Path | None,
    typer.Option("--dir", help="A folder of collection folders (default: the current folder)."),
]


app = typer.Typer()


class ConfirmationError(MunjangError):
    """A drop asked for no confirmation where none can be given (stdin is not a terminal)."""


@app.command("list")
def list_collections(
    context: typer.Context,
    folder: DirOption = None,
    backend: BackendOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """The collections in a folder of collection folders, or in the database at --backend."""
    from ..search.collection.collection import Collection

    if folder is not None and backend is not None:
        source = context.get_parameter_source("backend")  # typer's own click: its enum, by name
        if source is None or source.name != "ENVIRONMENT":
            raise ValueError("give --dir or --backend, not both")
        backend = None  # an explicit --dir wins over $MUNJANG_BACKEND
    names = Collection.names(backend if backend is not None else folder or Path("."))
    if as_json:
        typer.echo(json.dumps(names, ensure_ascii=False))
        return
    for name in names:
        typer.echo(name)


@app.command("drop")
def drop(
    folder: FolderArgument,
    backend: BackendOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Drop without asking.")] = False,
) -> None:
    """Delete a collection and everything it holds (documents, vectors, indexes): there is no undo."""
    from ..search.collection.collection import Collection

    where = folder if backend is None else str(folder)
    shown = str(folder) if backend is None else f"{folder} ({urlsplit(backend).scheme})"
    if not yes:
        if not sys.stdin.isatty():
            raise ConfirmationError(f"dropping {shown} needs confirmation: pass --yes")
        if not typer.confirm(f"Drop collection {shown} and everything in it?", default=False):
            typer.echo("not dropped", err=True)
            raise typer.Exit(1)
    Collection.drop(where, backend=backend)
    typer.echo(f"dropped {shown}")
