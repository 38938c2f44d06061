"""`munjang keywords` and `munjang topics`: KeyBERT-style keywords and BERTopic-style topics, Korean aware."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from .apps import OutputOption, SentencesArgument, emit_rows, read_sentences
from .options import (
    BatchOption,
    DeviceOption,
    FieldOption,
    FormatOption,
    JsonLinesOption,
    ModelOption,
    PromptNameOption,
)

app = typer.Typer()


def parse_ngram(text: str) -> tuple[int, int]:
    """ "1-2" -> (1, 2), "2" -> (2, 2); ValueError naming the option otherwise."""
    low, _, high = text.partition("-")
    try:
        bounds = (int(low), int(high or low))
    except ValueError:
        raise ValueError(f"--ngram must be N or LOW-HIGH (e.g. 1-2), not {text!r}") from None
    if not 1 <= bounds[0] <= bounds[1]:
        raise ValueError(f"--ngram must satisfy 1 <= LOW <= HIGH, not {text!r}")
    return bounds


def _documents(texts: list[str] | None, file: Path | None, field: str, input_format: str) -> list[str]:
    """Documents from the arguments, a file, or standard input (one per line), blank lines dropped."""
    if texts and file is not None:
        raise ValueError("give documents as arguments or with --file, not both")
    if texts:
        docs = list(texts)
    elif file is not None:
        from ..data import read_texts

        docs = read_texts(file, input_format, field)
    elif not sys.stdin.isatty():
        docs = sys.stdin.read().splitlines()
    else:
        raise ValueError("no documents: give them as arguments, with --file, or one per line on stdin")
    docs = [d for d in docs if d.strip()]
    if not docs:
        raise ValueError("no documents: every line is empty")
    return docs


@app.command("keywords")
def keywords(
    texts: Annotated[list[str] | None, typer.Argument(help="Documents (or use --file / stdin).")] = None,
    file: Annotated[Path | None, typer.Option("--file", "-f", help="Documents, one per line (.txt).")] = None,
    model: ModelOption = None,
    top_n: Annotated[int, typer.Option("--top-n", "-n", min=1, help="Keywords per document.")] = 5,
    method: Annotated[str, typer.Option(help="similarity, mmr (diverse) or maxsum.")] = "similarity",
    diversity: Annotated[float, typer.Option(min=0.0, max=1.0, help="mmr: 0 relevance, 1 diversity.")] = 0.5,
    nr_candidates: Annotated[int, typer.Option(min=1, help="maxsum: closest candidates considered.")] = 20,
    ngram: Annotated[str, typer.Option(help="Words (Korean: nouns) per keyphrase: N or LOW-HIGH.")] = "1-2",
    prompt_name: PromptNameOption = None,
    field: FieldOption = "text",
    input_format: FormatOption = "auto",
    batch_size: BatchOption = 32,
    device: DeviceOption = None,
    as_json: JsonLinesOption = False,
) -> None:
    """Keywords of each document (one per line): Korean noun phrases or word n-grams, ranked by similarity."""
    from ..applications import extract_keywords
    from ..applications.keywords import METHODS
    from ..encoders.embedder import load_embedder

    if method not in METHODS:
        raise ValueError(f"unknown --method {method!r}; choose {', '.join(METHODS)}")
    ngram_range = parse_ngram(ngram)
    if method == "maxsum" and nr_candidates < top_n:
        raise ValueError(f"--nr-candidates ({nr_candidates}) must be at least --top-n ({top_n})")
    docs = _documents(texts, file, field, input_format)
    encoder = load_embedder(model, device=device)
    found = extract_keywords(
        encoder,
        docs,
        top_n=top_n,
        keyphrase_ngram_range=ngram_range,
        diversity=diversity,
        method=method,
        nr_candidates=nr_candidates,
        prompt_name=prompt_name,
        batch_size=batch_size,
    )
    for i, (doc, words) in enumerate(zip(docs, found, strict=True)):
        if as_json:
            ranked = [{"keyword": k, "score": round(s, 6)} for k, s in words]
            row = {"doc": i, "text": doc, "keywords": ranked}
            typer.echo(json.dumps(row, ensure_ascii=False))
            continue
        typer.echo(f"[{i}] {doc}")
        for phrase, score in words:
            typer.echo(f"    {score:.4f}  {phrase}")


@app.command("topics")
def topics(
    sentences: SentencesArgument,
    model: ModelOption = None,
    min_topic_size: Annotated[int, typer.Option(min=2, help="Smallest topic (HDBSCAN cluster).")] = 10,
    n_words: Annotated[int, typer.Option(min=1, help="c-TF-IDF words per topic.")] = 10,
    reduction: Annotated[str, typer.Option(help="auto (UMAP if installed), umap, pca or none.")] = "auto",
    seed: Annotated[int, typer.Option(help="Random seed (UMAP).")] = 0,
    plot: Annotated[Path | None, typer.Option(help="Write the topic map and word bars here (.png).")] = None,
    prompt_name: PromptNameOption = None,
    field: FieldOption = "text",
    input_format: FormatOption = "auto",
    batch_size: BatchOption = 32,
    device: DeviceOption = None,
    output: OutputOption = None,
    as_json: JsonLinesOption = False,
) -> None:
    """Topics of a file of sentences (embed, UMAP, HDBSCAN, c-TF-IDF over Kiwi nouns), with labels."""
    from .._util.extras import require
    from ..applications import find_topics
    from ..applications.topics import REDUCTIONS
    from ..encoders.embedder import load_embedder

    if reduction not in REDUCTIONS:
        raise ValueError(f"unknown --reduction {reduction!r}; choose {', '.join(REDUCTIONS)}")
    if plot is not None:
        require("matplotlib")  # fail before the encoding, not after
    texts = read_sentences(sentences, field, input_format)
    if len(texts) < min_topic_size:
        raise ValueError(f"{sentences}: {len(texts)} sentences, fewer than --min-topic-size {min_topic_size}")
    encoder = load_embedder(model, device=device)
    found = find_topics(
        encoder,
        texts,
        min_topic_size=min_topic_size,
        n_words=n_words,
        reduction=reduction,
        seed=seed,
        prompt_name=prompt_name,
        batch_size=batch_size,
        show_progress_bar=len(texts) > 1000,
    )
    if plot is not None:
        from ..applications.topic_plot import plot_topics

        plot_topics(found, plot, title=sentences.name)
        typer.echo(f"wrote the topic plot to {plot}", err=True)
    if output is not None or as_json:
        rows = []
        for topic in found.topics:
            row = topic.to_dict(texts)
            row["rows"] = [int(i) for i in (found.assignments == topic.id).nonzero()[0]]
            rows.append(row)
        emit_rows(rows, output)
        return
    n_topics = sum(1 for t in found.topics if t.id >= 0)
    typer.echo(
        f"{n_topics} topics over {len(texts) - found.n_outliers} of {len(texts)} sentences "
        f"({found.n_outliers} outliers; reduction {found.reduction})"
    )
    for topic in found.topics:
        if topic.id < 0:
            continue
        words = ", ".join(f"{w} {s:.3f}" for w, s in topic.words)
        typer.echo(f"topic {topic.id} ({topic.size}): {topic.label}")
        typer.echo(f"    words: {words}")
        for i in topic.representative_docs:
            typer.echo(f"    [{i}] {texts[i]}")
