"""`munjang`: the command line, a thin layer over the Python API.

Every failure a user can cause (bad model folder, bad data file, bad argument) ends in one
`error: ...` line and exit status 2, never a traceback (set MUNJANG_DEBUG=1 to see one).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from .._util.atomic import atomic_write
from ..errors import MunjangError
from ..similarity import SIMILARITY_NAMES
from .adapt import adapt
from .apps import register as register_applications
from .collections import register as register_collections
from .index import index_app
from .models import models_app
from .mteb import eval_mteb
from .options import (
    BackendOption,
    BatchOption,
    DeviceOption,
    FieldOption,
    FormatOption,
    JsonLinesOption,
    ModelOption,
    ModelsOption,
    PrecisionOption,
    PromptNameOption,
    PromptOption,
    QueryOption,
    ThreadsOption,
    TopKOption,
)
from .serve import serve
from .topics import register as register_topics
from .train import train

app = typer.Typer(
    help="munjang (문장): sentence embeddings, similarity, search, reranking and STS evaluation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
eval_app = typer.Typer(help="Evaluate a model on a benchmark.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")
eval_app.command("mteb")(eval_mteb)
app.add_typer(index_app, name="index")
register_collections(index_app)
app.add_typer(models_app, name="models")
register_applications(app)
register_topics(app)
app.command()(serve)
app.command()(train)
app.command()(adapt)


HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]")
KOREAN_ON_DEFAULT = (
    "warning: the default model (all-MiniLM-L6-v2) is English-only and scores Korean text poorly; "
    "for Korean use -m multilingual-e5-small"
)


def _warn_korean_on_default(model: str | None, texts: list[str]) -> None:
    """One line on stderr when the default, English-only model is given Hangul. The default stays the
    embedded model, which needs no download: a warning corrects the silent wrong answer without
    making every first call pull a model five times larger."""
    if model is None and any(HANGUL.search(text) for text in texts[:10_000]):
        typer.echo(KOREAN_ON_DEFAULT, err=True)


def _load(model: str | None, device: str | None, **kwargs: Any) -> Any:
    from ..encoders.embedder import load_embedder

    return load_embedder(model, device=device, **kwargs)


@app.command()
def encode(
    inputs: Annotated[
        list[Path],
        typer.Argument(
            help="Sentences: .txt (one per line), .jsonl, .csv or .tsv; with --ray also .parquet, "
            "several files, folders and glob patterns.",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help=".npy (matrix) or .jsonl (text + vector per line); with --ray a folder of parquet shards.",
        ),
    ] = None,
    model: ModelOption = None,
    field: FieldOption = "text",
    input_format: Annotated[
        str, typer.Option("--format", help="auto, txt, jsonl, csv, tsv; with --ray also parquet.")
    ] = "auto",
    batch_size: Annotated[
        int | None, typer.Option("--batch-size", "-b", min=1, help="Rows per batch (default: token budget).")
    ] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Padded tokens per batch.")] = None,
    prompt_name: PromptNameOption = None,
    prompt: PromptOption = None,
    normalize: Annotated[bool, typer.Option(help="L2-normalize the vectors.")] = False,
    truncate_dim: Annotated[int | None, typer.Option(help="Keep the first N dimensions.")] = None,
    device: DeviceOption = None,
    backend: BackendOption = None,
    precision: PrecisionOption = None,
    threads: ThreadsOption = None,
    processes: Annotated[
        int | None, typer.Option(min=1, help="Encode in N worker processes (each with --threads threads).")
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace an existing output file (with --ray: start the folder over)."),
    ] = False,
    ray: Annotated[
        bool,
        typer.Option(
            "--ray", help="Encode on Ray into resumable parquet shards (a local Ray unless --ray-address)."
        ),
    ] = False,
    ray_address: Annotated[
        str | None, typer.Option(help="Join this Ray cluster (implies --ray; default $RAY_ADDRESS or local).")
    ] = None,
    workers: Annotated[
        int | None, typer.Option(min=1, help="Ray actors, one model each (default: 1 per GPU, else 2).")
    ] = None,
    shard_size: Annotated[int, typer.Option(min=1, help="Rows per parquet shard (with --ray).")] = 10_000,
    id_field: Annotated[
        str, typer.Option(help="Id field or column (with --ray; default <file>:<line>).")
    ] = "id",
) -> None:
    """Encode sentences into vectors (on the fastest configuration that keeps fp32 accuracy here,
    measured once per model and machine, unless --backend / --precision say otherwise).

    With --ray: many files into parquet shards with ids on a Ray actor pool; a rerun finishes what an
    interrupted one left.
    """
    from ..data import read_texts

    if ray or ray_address is not None:
        if processes:
            raise ValueError("--processes does not apply with --ray: use --workers and --threads")
        if output is None:
            raise ValueError("--ray writes a folder of parquet shards: name it with --output/-o")
        _encode_with_ray(
            inputs,
            output,
            model=model,
            workers=workers,
            threads=threads,
            device=device,
            shard_size=shard_size,
            batch_size=batch_size,
            max_tokens=max_tokens,
            text_field=field,
            id_field=id_field,
            format=input_format,
            prompt_name=prompt_name,
            prompt=prompt,
            normalize_embeddings=normalize,
            truncate_dim=truncate_dim,
            backend=backend,
            precision=precision,
            address=ray_address,
            overwrite=force,
        )
        return
    if workers is not None:
        raise ValueError("--workers needs --ray (for processes on this machine use --processes)")
    if len(inputs) != 1:
        raise ValueError(f"{len(inputs)} inputs given: encoding several files needs --ray")
    input = inputs[0]
    target = output or input.with_suffix(".npy")
    if target.suffix not in (".npy", ".jsonl"):
        raise ValueError(f"output {target}: use a .npy or .jsonl file name")
    if target.exists() and not force:
        raise FileExistsError(f"{target} exists; pass --force to replace it")
    texts = read_texts(input, input_format, field)
    _warn_korean_on_default(model, texts)
    options: dict[str, Any] = {
        "batch_size": batch_size,
        "max_tokens": max_tokens,
        "prompt_name": prompt_name,
        "prompt": prompt,
        "normalize_embeddings": normalize,
        "truncate_dim": truncate_dim,
        "show_progress_bar": len(texts) >= 256,
    }
    load_options: dict[str, Any] = {"backend": backend, "precision": precision, "threads": threads}
    began = start = time.perf_counter()
    if processes:
        from ..encoders.dense.pool import EncodePool

        devices = [device] * processes if device else None
        with EncodePool(
            model, devices=devices, processes=processes, threads_per_process=threads, **load_options
        ) as pool:
            start = time.perf_counter()
            vectors = pool.encode(texts, **options)
    else:
        encoder = _load(model, device, **load_options)
        start = time.perf_counter()
        vectors = encoder.encode(texts, **options)
    seconds = time.perf_counter() - start

    def write(path: Path) -> None:
        if target.suffix == ".npy":
            with open(path, "wb") as f:
                np.save(f, vectors)
        else:
            with open(path, "w", encoding="utf-8") as f:
                for text, vector in zip(texts, vectors, strict=True):
                    f.write(
                        json.dumps({"text": text, "embedding": vector.tolist()}, ensure_ascii=False) + "\n"
                    )

    atomic_write(target, write)
    rate = len(texts) / seconds if seconds > 0 else float("inf")
    total = time.perf_counter() - began
    typer.echo(
        f"wrote {target}: {vectors.shape[0]} x {vectors.shape[1]} in {total:.1f} s "
        f"({len(texts) / total:.0f} sentences/s with the model load and writing; encoding alone "
        f"{rate:.0f}/s, its first call's set-up included)"
    )


def _encode_with_ray(inputs: list[Path], output: Path, **options: Any) -> None:
    """`munjang encode --ray`: shards written and skipped as they go, then one summary line."""
    from ..distributed import encode_with_ray

    if output.suffix in (".npy", ".jsonl"):
        raise ValueError(f"--output {output}: with --ray it names a folder of parquet shards, not a file")
    summary = encode_with_ray(inputs, output, progress=typer.echo, **options)
    typer.echo(
        f"wrote {output}: {summary['total_rows']:,} x {summary['dim']} in {summary['shards']} shard(s), "
        f"{summary['shards_encoded']} encoded and {summary['shards_skipped']} already there "
        f"({summary['sentences_per_second']:.0f} sentences/s)"
    )


@app.command()
def similarity(
    sentences: Annotated[list[str], typer.Argument(help="Two or more sentences to compare.")],
    model: ModelOption = None,
    fn: Annotated[
        str | None, typer.Option(help="cosine, dot, euclidean, manhattan (default: the model's).")
    ] = None,
    prompt_name: PromptNameOption = None,
    device: DeviceOption = None,
) -> None:
    """Print the similarity matrix of the given sentences."""
    from ..similarity import similarity as similarity_fn

    if len(sentences) < 2:
        raise ValueError("give at least two sentences to compare")
    _warn_korean_on_default(model, sentences)
    encoder = _load(model, device)
    vectors = encoder.encode(sentences, prompt_name=prompt_name)
    name = fn or encoder.similarity_fn_name
    matrix = np.asarray(similarity_fn(vectors, vectors, name))
    typer.echo(f"{name} similarity")
    for i, text in enumerate(sentences):
        typer.echo(f"  [{i}] {text}")
    typer.echo("      " + "".join(f"{j:>8}" for j in range(len(sentences))))
    for i, row in enumerate(matrix):
        typer.echo(f"  [{i}] " + "".join(f"{v:8.4f}" for v in row))


@eval_app.command("sts")
def eval_sts(
    data: Annotated[
        Path, typer.Option("--data", "-d", help="STS file: KorSTS .tsv, STSb .csv, KLUE .json, ...")
    ],
    model: ModelsOption = None,
    data_format: Annotated[str, typer.Option("--format", help="auto, korsts, stsb, klue, generic.")] = "auto",
    batch_size: BatchOption = 32,
    prompt_name: PromptNameOption = None,
    prompt: PromptOption = None,
    device: DeviceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
) -> None:
    """Pearson and Spearman correlation with gold scores, for each similarity function.

    With --model given several times: one row per model (remote ones with requests, tokens, cost)."""
    from ..data import read_sts
    from ..evaluation import STSEvaluator
    from .compare import STS_COLUMNS, compare, usage_line, usage_of

    pairs = read_sts(data, data_format)
    evaluator = STSEvaluator.from_data(pairs, batch_size=batch_size, prompt_name=prompt_name, prompt=prompt)
    if model and len(model) > 1:
        size = f"{len(pairs)} pairs"
        compare(model, lambda m: _load(m, device), evaluator, STS_COLUMNS, 100, as_json, f"{data}: {size}")
        return
    encoder = _load(model[0] if model else None, device)
    start = time.perf_counter()
    metrics = evaluator(encoder)
    seconds = time.perf_counter() - start
    if as_json:
        usage = {"usage": usage_of(encoder)} if usage_of(encoder) is not None else {}
        typer.echo(
            json.dumps(
                {"data": str(data), "pairs": len(pairs), "seconds": seconds, **metrics, **usage}, indent=2
            )
        )
        return
    typer.echo(f"{data}: {len(pairs)} pairs, {seconds:.1f} s")
    typer.echo(f"  {'similarity':<10} {'Pearson':>8} {'Spearman':>9}")
    for name in SIMILARITY_NAMES:
        if f"spearman_{name}" in metrics:
            pearson, spearman = metrics[f"pearson_{name}"] * 100, metrics[f"spearman_{name}"] * 100
            typer.echo(f"  {name:<10} {pearson:8.2f} {spearman:9.2f}")
    primary = evaluator.primary_metric or "spearman_cosine"
    typer.echo(f"  primary: {primary} = {metrics[primary] * 100:.2f}")
    if (spent := usage_line(encoder)) is not None:
        typer.echo(spent)


@eval_app.command("retrieval")
def eval_retrieval(
    data: Annotated[Path, typer.Option(help="A BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv).")],
    split: Annotated[str, typer.Option(help="The qrels split.")] = "test",
    model: ModelsOption = None,
    batch_size: BatchOption = 32,
    device: DeviceOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
) -> None:
    """Recall@k, MRR@10, nDCG@10 and MAP of an encoder on a BEIR-format retrieval set.

    With --model given several times: one row per model (remote ones with requests, tokens, cost)."""
    from ..data import load_beir
    from ..evaluation import InformationRetrievalEvaluator
    from .compare import RETRIEVAL_COLUMNS, compare, usage_line, usage_of

    retrieval = load_beir(data, split)
    evaluator = InformationRetrievalEvaluator.from_data(
        retrieval, batch_size=batch_size, show_progress_bar=len(retrieval.corpus) > 1000
    )
    stats = retrieval.stats()
    if model and len(model) > 1:
        size = f"{data}: {stats['evaluated_queries']} queries, {stats['corpus']} documents"
        compare(model, lambda m: _load(m, device), evaluator, RETRIEVAL_COLUMNS, 1, as_json, size)
        return
    encoder = _load(model[0] if model else None, device)
    start = time.perf_counter()
    metrics = evaluator(encoder)
    seconds = time.perf_counter() - start
    if as_json:
        usage = {"usage": usage_of(encoder)} if usage_of(encoder) is not None else {}
        typer.echo(json.dumps({"data": str(data), **stats, "seconds": seconds, **metrics, **usage}, indent=2))
        return
    typer.echo(f"{data}: {stats['evaluated_queries']} queries, {stats['corpus']} documents, {seconds:.1f} s")
    for name, value in metrics.items():
        typer.echo(f"  {name:<24}{value:.4f}")
    if (spent := usage_line(encoder)) is not None:
        typer.echo(spent)


def _load_cross_encoder(model: str, device: str | None) -> Any:
    from ..encoders.cross import load_cross_encoder

    return load_cross_encoder(model, device=device)


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
    cross = _load_cross_encoder(model, device)
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
    _warn_korean_on_default(model, [*query, *texts])
    encoder = _load(model, device)
    cross = _load_cross_encoder(rerank_model, device) if rerank_model else None
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
        details = _load(model, None).describe()
    elif is_cross_encoder_folder(folder := resolve_model_path(model)):
        details = _load_cross_encoder(str(folder), "cpu").describe()
    else:
        from ..encoders.dense.backend_selection import BackendSelection

        encoder = _load(model, "cpu")
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


@app.command()
def demo(model: ModelOption = None, device: DeviceOption = None) -> None:
    """The main job: similarity matrix, semantic search and STSb score on the embedded model."""
    from ..applications.demo import run_demo

    run_demo(_load(model, device), model or "all-MiniLM-L6-v2 (embedded)", typer.echo)


def main() -> None:
    """Entry point: run the app and turn expected failures into one line on stderr."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except (MunjangError, OSError, ValueError, TypeError) as e:
        if os.environ.get("MUNJANG_DEBUG"):
            raise
        typer.echo(f"error: {e}", err=True)
        sys.exit(2)
    except Exception as e:  # a collection's database server refused or went away
        from ..search.collection.collection import Collection

        if not Collection.is_storage_error(e) or os.environ.get("MUNJANG_DEBUG"):
            raise
        typer.echo(f"error: database: {str(e).strip()}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
