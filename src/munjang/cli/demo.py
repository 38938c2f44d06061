"""`munjang demo`: the main job (similarity matrix, semantic search, STSb score) on one model."""

from __future__ import annotations

import typer

from .loading import load
from .options import DeviceOption, ModelOption

app = typer.Typer()


@app.command()
def demo(model: ModelOption = None, device: DeviceOption = None) -> None:
    """The main job: similarity matrix, semantic search and STSb score on the embedded model."""
    from ..applications.demo import run_demo

    run_demo(load(model, device), model or "all-MiniLM-L6-v2 (embedded)", typer.echo)
