"""`munjang adapt tsdae|mlm`: adapt an encoder to a domain's text without labels (training/adaptation.py)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

from .options import DeviceOption, FieldOption, FormatOption, ModelOption

app = typer.Typer()


@app.command()
def adapt(
    method: Annotated[str, typer.Argument(help="tsdae (denoising auto-encoder) or mlm (masked-LM).")],
    corpus: Annotated[
        Path, typer.Option("--corpus", help="Domain text: txt (one text per line), jsonl, csv or tsv.")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Run folder; the encoder goes to final/.")],
    model: ModelOption = None,
    steps: Annotated[int, typer.Option(min=0, help="Stop after this many steps (0: whole epochs).")] = 0,
    epochs: Annotated[int, typer.Option(min=1, help="Passes over the corpus.")] = 1,
    batch_size: Annotated[int, typer.Option("--batch-size", "-b", min=1, help="Sentences per step.")] = 8,
    lr: Annotated[float | None, typer.Option("--lr", help="Learning rate (tsdae 3e-5, mlm 5e-5).")] = None,
    max_seq_length: Annotated[
        int | None, typer.Option(min=2, help="Truncate training inputs to this many tokens (faster).")
    ] = None,
    freeze_word_embeddings: Annotated[
        bool, typer.Option(help="Keep the token embedding matrix fixed (saves memory on large vocabularies).")
    ] = False,
    split_sentences: Annotated[
        bool, typer.Option(help="Split each text into sentences (Kiwi for Korean) before training.")
    ] = True,
    save_steps: Annotated[int, typer.Option(min=0, help="Checkpoint every N steps (0: each epoch).")] = 0,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the newest checkpoint.")] = False,
    field: FieldOption = "text",
    format: FormatOption = "auto",
    device: DeviceOption = None,
) -> None:
    """Adapt a model to a domain corpus without labels (TSDAE or continued masked-LM pretraining)."""
    from ..data.texts import read_texts
    from ..encoders.dense.encoder import load_encoder
    from ..training.adaptation import METHODS, corpus_sentences
    from ..training.adaptation import adapt as run_adapt
    from ..training.checkpoint import list_checkpoints

    if method not in METHODS:
        raise ValueError(f"unknown adaptation method {method!r}; choose from {', '.join(METHODS)}")
    texts = read_texts(corpus, format=format, field=field)
    sentences = corpus_sentences(texts) if split_sentences else [t for t in texts if t.strip()]
    if not sentences:
        raise ValueError(f"{corpus}: no text to adapt on")
    encoder = load_encoder(model, device=device, precision="fp32")  # trained: exact, on live weights
    typer.echo(f"{method}: {len(sentences):,} sentences from {corpus}; output {output}", err=True)
    try:
        summary = run_adapt(
            encoder,
            method,
            sentences,
            output,
            steps=steps,
            epochs=epochs,
            batch_size=batch_size,
            learning_rate=lr,
            max_seq_length=max_seq_length,
            freeze_word_embeddings=freeze_word_embeddings,
            save_steps=save_steps,
            resume=resume,
        )
    except KeyboardInterrupt:
        if not list_checkpoints(output / "checkpoints"):
            raise
        again = ["munjang", *sys.argv[1:]]
        if "--resume" not in again:
            again.append("--resume")
        typer.echo(f"interrupted; to continue: {shlex.join(again)}", err=True)
        raise typer.Exit(130) from None
    head = "read from the checkpoint" if summary["head_weights"] else "new, tied to the word embeddings"
    typer.echo(
        f"done: {summary['global_step']:,} steps in {summary['train_seconds']:.1f} s (LM head {head})",
        err=True,
    )
    typer.echo(summary["final"])
