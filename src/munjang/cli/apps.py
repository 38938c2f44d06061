"""`munjang mine-paraphrases`, `cluster` and `dedup`: applications over a file of sentences."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from .._util.atomic import atomic_write
from .options import BatchOption, DeviceOption, FieldOption, FormatOption, JsonLinesOption, ModelOption

SentencesArgument = Annotated[
    Path, typer.Argument(help="Sentences: .txt (one per line), .jsonl, .csv or .tsv.")
]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write JSON lines here instead of printing.")
]

app = typer.Typer()


def read_sentences(path: Path, field: str, input_format: str) -> list[str]:
    from ..data import read_texts

    texts = read_texts(path, input_format, field)
    if len(texts) < 2:
        raise ValueError(f"{path}: needs at least two sentences, found {len(texts)}")
    for i, text in enumerate(texts):
        if not text.strip():
            raise ValueError(f"{path}: sentence {i + 1} is empty")
    return texts


def _encode(model: str | None, device: str | None, texts: list[str], batch_size: int) -> Any:
    from ..encoders.embedder import load_embedder

    encoder = load_embedder(model, device=device)
    return encoder, encoder.encode(
        texts, batch_size=batch_size, show_progress_bar=len(texts) > 1000, convert_to_tensor=True
    )


def emit_rows(rows: list[dict[str, Any]], output: Path | None) -> None:
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    if output is None:
        for line in lines:
            typer.echo(line)
        return
    atomic_write(output, lambda tmp: tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8"))
    typer.echo(f"wrote {len(lines)} lines to {output}")


@app.command("mine-paraphrases")
def mine_paraphrases(
    sentences: SentencesArgument,
    model: ModelOption = None,
    top_k: Annotated[int, typer.Option(min=1, help="Neighbours considered per sentence.")] = 100,
    max_pairs: Annotated[int, typer.Option(min=1, help="Most pairs kept (best first).")] = 500_000,
    threshold: Annotated[float | None, typer.Option(help="Only pairs scoring at least this.")] = None,
    field: FieldOption = "text",
    input_format: FormatOption = "auto",
    batch_size: BatchOption = 32,
    device: DeviceOption = None,
    output: OutputOption = None,
    as_json: JsonLinesOption = False,
) -> None:
    """The most similar sentence pairs in a file, in memory bounded by chunks (never N x N)."""
    from ..applications import paraphrase_mining_embeddings

    texts = read_sentences(sentences, field, input_format)
    _, embeddings = _encode(model, device, texts, batch_size)
    pairs = paraphrase_mining_embeddings(
        embeddings, top_k=top_k, max_pairs=max_pairs, threshold=threshold, show_progress_bar=len(texts) > 1000
    )
    if output is not None or as_json:
        rows = [{"score": s, "i": i, "j": j, "text_i": texts[i], "text_j": texts[j]} for s, i, j in pairs]
        emit_rows(rows, output)
        return
    for score, i, j in pairs:
        typer.echo(f"{score:.4f}  [{i}] {texts[i]}  <>  [{j}] {texts[j]}")


@app.command("cluster")
def cluster(
    sentences: SentencesArgument,
    model: ModelOption = None,
    method: Annotated[str, typer.Option(help="community (threshold), kmeans or hdbscan.")] = "community",
    threshold: Annotated[float, typer.Option(help="community: cosine similarity to join.")] = 0.75,
    min_size: Annotated[int, typer.Option(min=1, help="community / hdbscan: smallest cluster.")] = 10,
    n_clusters: Annotated[int | None, typer.Option(min=1, help="kmeans: number of clusters.")] = None,
    seed: Annotated[int, typer.Option(help="kmeans: random seed.")] = 0,
    field: FieldOption = "text",
    input_format: FormatOption = "auto",
    batch_size: BatchOption = 32,
    device: DeviceOption = None,
    output: OutputOption = None,
    as_json: JsonLinesOption = False,
) -> None:
    """Group sentences by meaning: threshold communities (as sentence-transformers), k-means or HDBSCAN."""
    from ..applications import community_detection, group_by_label, hdbscan_clusters, kmeans_clusters

    texts = read_sentences(sentences, field, input_format)
    if method == "kmeans" and n_clusters is None:
        raise ValueError("--method kmeans needs --n-clusters")
    if method not in ("community", "kmeans", "hdbscan"):
        raise ValueError(f"unknown --method {method!r}; choose community, kmeans or hdbscan")
    _, embeddings = _encode(model, device, texts, batch_size)
    if method == "community":
        groups = community_detection(embeddings, threshold=threshold, min_community_size=min_size)
    elif method == "kmeans":
        assert n_clusters is not None
        groups = group_by_label(kmeans_clusters(embeddings, n_clusters, seed=seed))
    else:
        groups = group_by_label(hdbscan_clusters(embeddings, min_cluster_size=max(min_size, 2)))
    if output is not None or as_json:
        emit_rows(
            [{"cluster": c, "rows": g, "texts": [texts[i] for i in g]} for c, g in enumerate(groups)], output
        )
        return
    clustered = sum(len(g) for g in groups)
    typer.echo(f"{len(groups)} clusters over {clustered} of {len(texts)} sentences")
    for c, group in enumerate(groups):
        typer.echo(f"cluster {c} ({len(group)} sentences)")
        for i in group[:5]:
            typer.echo(f"    [{i}] {texts[i]}")
        if len(group) > 5:
            typer.echo(f"    ... {len(group) - 5} more")


@app.command("dedup")
def dedup(
    sentences: SentencesArgument,
    model: ModelOption = None,
    threshold: Annotated[
        float, typer.Option(help="Cosine similarity from which texts are duplicates.")
    ] = 0.95,
    field: FieldOption = "text",
    input_format: FormatOption = "auto",
    batch_size: BatchOption = 32,
    device: DeviceOption = None,
    output: OutputOption = None,
) -> None:
    """Near-duplicate detection: keep the first sentence of each group of near-duplicates."""
    from ..applications import deduplicate
    from ..encoders.embedder import load_embedder

    texts = read_sentences(sentences, field, input_format)
    encoder = load_embedder(model, device=device)
    keep = deduplicate(
        texts, encoder, threshold=threshold, batch_size=batch_size, show_progress_bar=len(texts) > 1000
    )
    rows = [{"row": i, "text": texts[i]} for i in keep]
    if output is not None:
        emit_rows(rows, output)
    else:
        for row in rows:
            typer.echo(row["text"])
    typer.echo(f"kept {len(keep)} of {len(texts)} sentences", err=True)
