"""`munjang rerank` and `munjang search`: queries over a file of documents, by a cross-encoder or by
meaning (optionally reranked); for a persistent collection see `munjang index search`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .loading import load, load_cross, warn_korean_on_default
from .options import (
    BatchOption,
    DeviceOption,
    FieldOption,
    FormatOption,
    JsonLinesOption,
    ModelOption,
    QueryOption,
    TopKOption,
)

app = typer.Typer()


def _queries_and_texts(query: list[str], documents: Path, field: str, input_format: str) -> list[str]:
    from ..data import read_texts

    for i, q in enumerate(query):
        if not q.strip():
            raise ValueError(f"query {i + 1} is empty")
    texts = read_texts(documents, input_format, field)
    if not texts:
        raise ValueError(f"{documents}: no documents")
    return texts


@app.command()
def rerank(
    documents: Annotated[Path, typer.Argument(help="Documents: .txt (one per line), .jsonl, .csv or .tsv.")],
    query: QueryOption,
    model: Annotated[str, typer.Option("--model", "-m", help="Cross-encoder folder or hub id.")],
    top_k: TopKOption = 10,
    field: FieldOption = "text",
    input_format: FormatOption = "auto",
    batch_size: BatchOption = 32,
    device: DeviceOption = None,
    as_json: JsonLinesOption = False,
    instruction: Annotated[
        str | None, typer.Option(help="The reranker's task; an LLM reranker reads it as its system prompt.")
    ] = None,
) -> None:
    """Score every document against each query with a cross-encoder and print the best."""
    texts = _queries_and_texts(query, documents, field, input_format)
    cross = load_cross(model, device)
    for q in query:
        hits = cross.rank(
            q, texts, top_k=top_k, batch_size=batch_size, return_documents=True, prompt=instruction
        )
        if as_json:
            typer.echo(json.dumps({"query": q, "results": hits}, ensure_ascii=False))
            continue
        typer.echo(f"query: {q}")
        for rank, hit in enumerate(hits, 1):
            typer.echo(f"  {rank:>3}. {hit['score']:.4f}  [{hit['corpus_id']}] {hit['text']}")


@app.command()
def search(
    documents: Annotated[Path, typer.Argument(help="Corpus: .txt (one per line), .jsonl, .csv or .tsv.")],
    query: QueryOption,
    model: ModelOption = None,
    rerank_model: Annotated[
        str | None, typer.Option("--rerank", help="Cross-encoder that re-orders the retrieved candidates.")
    ] = None,
    retrieve_k: Annotated[
        int, typer.Option("--retrieve-k", min=1, help="Candidates the bi-encoder hands to the reranker.")
    ] = 100,
    top_k: TopKOption = 10,
    query_prompt_name: Annotated[
        str | None, typer.Option(help="Encoder prompt for queries (e5: query).")
    ] = None,
    corpus_prompt_name: Annotated[
        str | None, typer.Option(help="Encoder prompt for documents (e5: passage).")
    ] = None,
    field: FieldOption = "text",
    input_format: FormatOption = "auto",
    batch_size: BatchOption = 32,
    device: DeviceOption = None,
    as_json: JsonLinesOption = False,
) -> None:
    """Semantic search over a file of documents, optionally reranked by a cross-encoder."""
    from ..search import RetrieveAndRerank

    texts = _queries_and_texts(query, documents, field, input_format)
    warn_korean_on_default(model, [*query, *texts])
    encoder = load(model, device)
    cross = load_cross(rerank_model, device) if rerank_model else None
    pipeline = RetrieveAndRerank(
        encoder,
        cross,
        texts,
        retrieve_k=retrieve_k,
        query_prompt_name=query_prompt_name,
        corpus_prompt_name=corpus_prompt_name,
        batch_size=batch_size,
        show_progress_bar=len(texts) > 1000,
    )
    results = pipeline.search(list(query), top_k=top_k)
    for q, hits in zip(query, results, strict=True):
        assert isinstance(hits, list)
        if as_json:
            rows = [
                {
                    "corpus_id": h.corpus_id,
                    "score": h.score,
                    "retrieval_score": h.retrieval_score,
                    "retrieval_rank": h.retrieval_rank,
                    "text": h.text,
                }
                for h in hits
            ]
            typer.echo(json.dumps({"query": q, "results": rows}, ensure_ascii=False))
            continue
        typer.echo(f"query: {q}" + (" (reranked)" if cross is not None else ""))
        for rank, h in enumerate(hits, 1):
            moved = f" (was {h.retrieval_rank + 1})" if cross is not None else ""
            typer.echo(f"  {rank:>3}. {h.score:.4f}{moved}  [{h.corpus_id}] {h.text}")
