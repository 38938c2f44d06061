"""`munjang info`: what a model is (architecture, dimensions, pooling, prompts; the backend chosen)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from .loading import load, load_cross

app = typer.Typer()


@app.command()
def info(
    model: Annotated[
        str | None, typer.Argument(help="Model folder or hub id (default: the embedded model).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Architecture, dimensions, max length, pooling and prompts of a model (or a cross-encoder's head)."""
    from ..encoders.formats import is_cross_encoder_folder
    from ..encoders.remote import is_remote_name
    from ..models.hub import resolve_model_path

    if is_remote_name(model):
        details = load(model, None).describe()
    elif is_cross_encoder_folder(folder := resolve_model_path(model)):
        details = load_cross(str(folder), "cpu").describe()
    else:
        from ..encoders.dense.backend_selection import BackendSelection

        encoder = load(model, "cpu")
        details = encoder.info() if isinstance(encoder, BackendSelection) else encoder.describe()
    if as_json:
        typer.echo(json.dumps(details, indent=2, ensure_ascii=False))
        return
    for key, value in details.items():
        if key == "chosen_by" and isinstance(value, dict):
            bar = value["bar"]
            typer.echo(
                f"{key:<20} {value['chosen_by']} {value['measured_at']}: the fastest with cosine to "
                f"fp32 >= {bar['mean_cosine']} (mean), >= {bar['min_cosine']} (min)"
            )
            for t in value["trials"]:
                speed = "-" if t["sentences_per_s"] is None else f"{t['sentences_per_s']:,.0f}/s"
                accuracy = t["error"] or f"cosine mean {t['mean_cosine']:.6f} min {t['min_cosine']:.5f}"
                typer.echo(f"{'':<20}   {t['backend'] + ' ' + t['precision']:<15} {speed:>9}  {accuracy}")
            if value.get("not_measured"):
                typer.echo(f"{'':<20}   {value['not_measured']}")
            continue
        typer.echo(f"{key:<20} {value}")
