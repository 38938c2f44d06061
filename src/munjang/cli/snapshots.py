"""`munjang index export / import / reindex / alias ...`: moving a collection and switching names.

munjang index export NAME FILE [--backend URL]          a snapshot file (docs/snapshots.md)
munjang index import FILE TARGET [--backend URL]        restore it (any backend), no encoding
munjang index reindex SRC DST --model M [--chunk-tokens N]   rebuild from the stored texts
munjang index alias set NAME TARGET | list FOLDER | remove NAME   [--backend URL]
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .index import BackendOption, FolderArgument, _where
from .options import BatchOption, DeviceOption, ModelOption

app = typer.Typer()
alias_app = typer.Typer(
    help="Aliases: names in a collections folder or database that point at one of its collections."
)
app.add_typer(alias_app, name="alias")


@app.command("export")
def export(
    folder: FolderArgument,
    file: Annotated[Path, typer.Argument(help="The snapshot file to write (replaced whole at the end).")],
    backend: BackendOption = None,
) -> None:
    """Write a snapshot of a collection: passages, metadata, BM25 tokens and vectors, read at one
    commit while writers go on."""
    from ..search.collection.collection import Collection

    with Collection.open(_where(folder, backend), backend=backend, readonly=True) as col:
        manifest = col.export(file)
    counts = manifest["counts"]
    typer.echo(f"exported {counts['documents']} documents in {counts['passages']} passages to {file}")


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="A snapshot file (munjang index export).")],
    target: Annotated[Path, typer.Argument(help="The new collection's folder (with --backend: its name).")],
    backend: BackendOption = None,
) -> None:
    """Restore a snapshot as a new collection, on any backend, without encoding anything; run again
    after an interruption, it resumes."""
    from ..search.collection.collection import Collection

    with Collection.import_(file, _where(target, backend), backend=backend) as col:
        info = col.info()
    typer.echo(f"imported {info['documents']} documents in {info['passages']} passages into {info['folder']}")


@app.command("reindex")
def reindex(
    source: Annotated[Path, typer.Argument(help="The collection to read (with --backend: its name).")],
    target: Annotated[Path, typer.Argument(help="The collection to build (with --backend: its name).")],
    model: ModelOption = None,
    backend: BackendOption = None,
    chunk_tokens: Annotated[
        int | None, typer.Option(min=16, help="Passage budget in tokens (default: the source's).")
    ] = None,
    batch_size: BatchOption = 32,
    device: DeviceOption = None,
) -> None:
    """Build a new collection from a collection's stored documents with another model or passage
    budget (resumable: run again, it adds what is missing); then `alias set` moves traffic to it."""
    from ..search.collection.collection import Collection

    chunking = None if chunk_tokens is None else {"max_tokens": chunk_tokens}
    with (
        Collection.open(_where(source, backend), backend=backend, readonly=True, device=device) as src,
        src.reindex(
            _where(target, backend), model, backend=backend, chunking=chunking, batch_size=batch_size
        ) as col,
    ):
        info = col.info()
    typer.echo(f"reindexed {info['documents']} documents into {info['folder']} ({info['model']})")


def _place(name: Path, backend: str | None) -> tuple[str | Path, str]:
    """Where the alias `name` is kept (its folder, or the database at `backend`) and its plain name."""
    if backend is None:
        return name.parent, name.name
    if len(name.parts) != 1:
        raise ValueError(f"{name}: with --backend an alias is one plain name in that database")
    return backend, str(name)


@alias_app.command("set")
def alias_set(
    name: Annotated[
        Path, typer.Argument(help="The alias: FOLDER/NAME in a collections folder (with --backend: NAME).")
    ],
    target: Annotated[str, typer.Argument(help="The collection it points at, in the same place.")],
    backend: BackendOption = None,
) -> None:
    """Point an alias at a collection, atomically (readers opened before keep theirs)."""
    from ..search.collection.aliases import set_alias

    where, alias = _place(name, backend)
    collection = Path(target)
    if collection.parent not in {Path("."), Path(where)}:
        raise ValueError(f"{target}: an alias points at a collection in its own place ({where})")
    before = set_alias(where, alias, collection.name)
    moved = f" (was {before})" if before else ""
    shown = name.parent / collection.name if backend is None else collection.name
    typer.echo(f"{name} -> {shown}{moved}")


@alias_app.command("list")
def alias_list(
    folder: Annotated[
        Path | None, typer.Argument(help="A collections folder (none with --backend: that database's).")
    ] = None,
    backend: BackendOption = None,
) -> None:
    """The aliases of a collections folder or database."""
    from ..search.collection.aliases import read_aliases

    place = backend if backend is not None else folder
    if place is None or (folder is not None and backend is not None):
        raise ValueError("name a collections folder, or a database with --backend (one of the two)")
    for alias, target in sorted(read_aliases(place).items()):
        typer.echo(f"{alias}\t{target}")


@alias_app.command("remove")
def alias_remove(
    name: Annotated[Path, typer.Argument(help="The alias (FOLDER/NAME; with --backend: NAME).")],
    backend: BackendOption = None,
) -> None:
    """Remove an alias (the collection is kept)."""
    from ..search.collection.aliases import remove_alias

    where, alias = _place(name, backend)
    if not remove_alias(where, alias):
        raise ValueError(f"{name}: no such alias")
    typer.echo(f"removed {name}")
