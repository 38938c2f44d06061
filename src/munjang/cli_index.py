"""`munjang index ...`: persistent collections from the command line (create, add, search, delete, info)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from .cli_options import BatchOption, DeviceOption, FieldOption, FormatOption, JsonLinesOption, ModelOption

index_app = typer.Typer(
    help="Persistent search collections: documents, metadata, dense + BM25 indexes in one folder, "
    "or in PostgreSQL + pgvector with --backend.",
    no_args_is_help=True,
)

FolderArgument = Annotated[
    Path, typer.Argument(help="The collection folder (with --backend: the collection's name).")
]
BackendOption = Annotated[
    str | None,
    typer.Option(
        envvar="MUNJANG_BACKEND",
        help="Keep the collection in PostgreSQL + pgvector at this postgresql:// URL instead of a folder.",
    ),
]


def _open(folder: Path, backend: str | None, device: str | None = None, readonly: bool = False) -> Any:
    from .search.collection import Collection

    return Collection.open(_where(folder, backend), backend=backend, device=device, readonly=readonly)


def _where(folder: Path, backend: str | None) -> Any:
    return folder if backend is None else str(folder)


@index_app.command("create")
def create(
    folder: FolderArgument,
    backend: BackendOption = None,
    model: ModelOption = None,
    index: Annotated[str, typer.Option(help="Dense index: exact (brute force) or hnsw.")] = "exact",
    metric: Annotated[str, typer.Option(help="cosine or dot.")] = "cosine",
    tokenizer: Annotated[
        str, typer.Option(help="BM25 tokens: auto (Kiwi for Hangul, words otherwise), kiwi, word.")
    ] = "auto",
    bm25_method: Annotated[str, typer.Option(help="lucene, robertson, atire, bm25l, bm25+.")] = "lucene",
    connectivity: Annotated[int, typer.Option(min=2, help="HNSW links per node (M).")] = 16,
    expansion_add: Annotated[int, typer.Option(min=1, help="HNSW ef at build time.")] = 128,
    expansion_search: Annotated[int, typer.Option(min=1, help="HNSW ef at query time.")] = 64,
    device: DeviceOption = None,
) -> None:
    """Create an empty collection bound to an embedding model."""
    from .search.collection import Collection

    hnsw = (
        {"connectivity": connectivity, "expansion_add": expansion_add, "expansion_search": expansion_search}
        if index == "hnsw"
        else None
    )
    col = Collection.create(
        _where(folder, backend),
        model,
        backend=backend,
        index=index,
        metric=metric,
        tokenizer=tokenizer,
        bm25={"method": bm25_method},
        hnsw=hnsw,
        device=device,
    )
    info = col.info()
    col.close()
    typer.echo(
        f"created {info['folder']}: {info['model']} "
        f"({info['dim']}-d, {info['metric']}, {info['index']} index)"
    )


@index_app.command("add")
def add(
    folder: FolderArgument,
    documents: Annotated[Path, typer.Argument(help="Documents: .txt (one per line), .jsonl, .csv or .tsv.")],
    backend: BackendOption = None,
    field: FieldOption = "text",
    id_field: Annotated[
        str, typer.Option(help="Id field / column; records without one get FILE:LINE as their id.")
    ] = "id",
    input_format: FormatOption = "auto",
    upsert: Annotated[bool, typer.Option("--upsert", help="Replace documents whose id exists.")] = False,
    skip_existing: Annotated[
        bool, typer.Option("--skip-existing", help="Keep documents whose id exists (resumes an add).")
    ] = False,
    batch_size: BatchOption = 32,
    commit_every: Annotated[int, typer.Option(min=1, help="Documents per committed transaction.")] = 1000,
    device: DeviceOption = None,
) -> None:
    """Add documents (jsonl: other fields become metadata; csv/tsv: other columns)."""
    from .data import read_records

    if upsert and skip_existing:
        raise ValueError("--upsert and --skip-existing exclude each other")
    records = read_records(documents, input_format, field, id_field=id_field)
    if not records:
        raise ValueError(f"{documents}: no documents")
    ids = [r.id if r.id is not None else f"{documents.name}:{r.line}" for r in records]
    conflict = "upsert" if upsert else "skip" if skip_existing else "error"
    with _open(folder, backend, device) as col:
        result = col.add(
            ids,
            [r.text for r in records],
            [r.metadata for r in records],
            on_conflict=conflict,
            batch_size=batch_size,
            commit_every=commit_every,
            show_progress_bar=True,
        )
        total = len(col)
    typer.echo(
        f"added {result.added}, updated {result.updated}, skipped {result.skipped} "
        f"(encoded {result.encoded}, the rest from the cache); {total} documents in {col.location}"
    )


def _weights(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"--weights {text!r}: expected numbers separated by commas, e.g. 0.7,0.3") from None


@index_app.command("search")
def search(
    folder: FolderArgument,
    query: Annotated[list[str], typer.Option("--query", "-q", help="Query text (repeat for several).")],
    backend: BackendOption = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="Results per query.")] = 10,
    mode: Annotated[str, typer.Option(help="dense, lexical (BM25) or hybrid.")] = "dense",
    hybrid: Annotated[bool, typer.Option("--hybrid", help="Same as --mode hybrid.")] = False,
    fusion: Annotated[str, typer.Option(help="Hybrid fusion: rrf or weighted.")] = "rrf",
    weights: Annotated[str | None, typer.Option(help="Fusion weights dense,lexical (e.g. 0.7,0.3).")] = None,
    rrf_k: Annotated[float, typer.Option(min=0, help="RRF constant.")] = 60.0,
    normalization: Annotated[str, typer.Option(help="Weighted fusion: minmax, zscore, none.")] = "minmax",
    candidates: Annotated[int, typer.Option(min=1, help="Candidates per retriever for fusion/rerank.")] = 100,
    rerank: Annotated[str | None, typer.Option(help="Cross-encoder that re-scores the candidates.")] = None,
    rerank_k: Annotated[int | None, typer.Option(min=1, help="How many candidates to rerank.")] = None,
    filters: Annotated[
        list[str] | None,
        typer.Option("--filter", help="Metadata filter: key=value (repeat: AND) or a JSON object."),
    ] = None,
    device: DeviceOption = None,
    as_json: JsonLinesOption = False,
) -> None:
    """Search a collection by meaning, by words, or both; filter by metadata; rerank."""
    from .search.filters import parse_filter_args

    spec = parse_filter_args(filters or [])
    with _open(folder, backend, device, readonly=True) as col:
        results = col.search(
            list(query),
            k=top_k,
            mode="hybrid" if hybrid else mode,
            filter=spec,
            fusion=fusion,
            weights=_weights(weights),
            rrf_k=rrf_k,
            normalization=normalization,
            candidates=candidates,
            rerank=rerank,
            rerank_k=rerank_k,
        )
    for q, hits in zip(query, results, strict=True):
        if as_json:
            rows = [
                {"id": h.id, "score": h.score, "scores": h.scores, "text": h.text, "metadata": h.metadata}
                for h in hits
            ]
            typer.echo(json.dumps({"query": q, "results": rows}, ensure_ascii=False))
            continue
        typer.echo(f"query: {q}")
        if not hits:
            typer.echo("  (no results)")
        for rank, h in enumerate(hits, 1):
            typer.echo(f"  {rank:>3}. {h.score:.4f}  [{h.id}] {h.text}")


@index_app.command("delete")
def delete(
    folder: FolderArgument,
    ids: Annotated[list[str], typer.Argument(help="Ids of the documents to delete.")],
    backend: BackendOption = None,
) -> None:
    """Delete documents by id (unknown ids are reported, not an error)."""
    with _open(folder, backend) as col:
        removed = col.delete(ids)
        total = len(col)
    missing = len(set(ids)) - removed
    note = f" ({missing} ids were not in the collection)" if missing else ""
    typer.echo(f"deleted {removed}{note}; {total} documents left")


@index_app.command("info")
def info(
    folder: FolderArgument,
    backend: BackendOption = None,
    check: Annotated[bool, typer.Option("--check", help="Also verify database and indexes.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Model, sizes and index settings of a collection; --check verifies its integrity."""
    with _open(folder, backend, readonly=True) as col:
        described = col.info()
        if check:
            described["problems"] = col.check()
    if as_json:
        typer.echo(json.dumps(described, ensure_ascii=False, indent=2))
    else:
        for key, value in described.items():
            typer.echo(f"{key:<22}{value}")
    if check and described["problems"]:
        raise typer.Exit(1)
