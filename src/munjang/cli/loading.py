"""The models a command names, loaded inside the command (the CLI starts without torch), and the
one-line warning when the English-only default model is given Korean text."""

from __future__ import annotations

import re
from typing import Any

import typer

HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]")
KOREAN_ON_DEFAULT = (
    "warning: the default model (all-MiniLM-L6-v2) is English-only and scores Korean text poorly; "
    "for Korean use -m multilingual-e5-small"
)


def warn_korean_on_default(model: str | None, texts: list[str]) -> None:
    """One line on stderr when the default, English-only model is given Hangul. The default stays the
    embedded model, which needs no download: a warning corrects the silent wrong answer without
    making every first call pull a model five times larger."""
    if model is None and any(HANGUL.search(text) for text in texts[:10_000]):
        typer.echo(KOREAN_ON_DEFAULT, err=True)


def load(model: str | None, device: str | None, **kwargs: Any) -> Any:
    """The embedder `--model` names (None: the embedded default), on `device`."""
    from ..encoders.embedder import load_embedder

    return load_embedder(model, device=device, **kwargs)


def load_cross(model: str, device: str | None) -> Any:
    """The cross-encoder (reranker) `model` names, on `device`."""
    from ..encoders.cross import load_cross_encoder

    return load_cross_encoder(model, device=device)
