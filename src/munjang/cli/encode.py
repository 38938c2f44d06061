"""`munjang encode` and `munjang similarity`: sentences in, their vectors or their similarity matrix out."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from .._util.atomic import atomic_write
from .loading import load, warn_korean_on_default
from .options import (
    BackendOption,
    DeviceOption,
    FieldOption,
    ModelOption,
    PrecisionOption,
    PromptNameOption,
    PromptOption,
    ThreadsOption,
)

app = typer.Typer()


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
    warn_korean_on_default(model, texts)
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
        encoder = load(model, device, **load_options)
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
    warn_korean_on_default(model, sentences)
    encoder = load(model, device)
    vectors = encoder.encode(sentences, prompt_name=prompt_name)
    name = fn or encoder.similarity_fn_name
    matrix = np.asarray(similarity_fn(vectors, vectors, name))
    typer.echo(f"{name} similarity")
    for i, text in enumerate(sentences):
        typer.echo(f"  [{i}] {text}")
    typer.echo("      " + "".join(f"{j:>8}" for j in range(len(sentences))))
    for i, row in enumerate(matrix):
        typer.echo(f"  [{i}] " + "".join(f"{v:8.4f}" for v in row))
