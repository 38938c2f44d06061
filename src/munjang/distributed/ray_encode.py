"""Encode a large corpus on a Ray cluster (Ray Data, an actor pool with one model per actor) into
resumable parquet shards.

The driver reads and checks the whole corpus first (a bad row fails before any work starts), cuts it
into fixed-size shards by row order, and sends only the shards that are not on disk yet to the actor
pool; each actor encodes a whole shard (length-sorted, token-budget batches within it) and sends the
vectors back, and the driver writes the shard atomically. A killed run therefore loses at most the
shards in flight, and its rerun encodes only those. The driver writes every file, so the output folder
needs to be reachable from the driver only, also on a remote cluster (where munjang must be installed
on the workers).

Ray is an optional dependency (`pip install 'munjang[ray]'`), imported only when used.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MunjangError
from .corpus import Corpus, MissingExtraError, read_corpus
from .shards import (
    FORMAT,
    locked,
    prepare_folder,
    remove_temporary_files,
    shard_count,
    shard_is_complete,
    shard_name,
    write_manifest,
    write_shard,
)

DEFAULT_SHARD_SIZE = 10_000
DEFAULT_CPU_WORKERS = 2


class RayEncodeError(MunjangError, RuntimeError):
    """A Ray worker failed; the shards written so far are kept and a rerun continues from them."""


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise MissingExtraError("encoding with Ray needs Ray Data: pip install 'munjang[ray]'") from e
    return ray


class ShardEncoder:
    """A Ray Data actor: loads the model once, then encodes whole shards (one Ray Data row each)."""

    def __init__(
        self,
        model: str,
        device: str,
        threads: int | None,
        load_options: dict[str, Any],
        encode_options: dict[str, Any],
    ) -> None:
        # The actor has its own cores: a tokenizer thread pool would only compete with the model.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from ..encoder import load_encoder

        self.encoder = load_encoder(model, device=device, threads=threads, **load_options)
        self.encode_options = encode_options

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Shard numbers and texts in; shard numbers and the float32 vectors' bytes out."""
        shards, vectors = [], []
        for shard, texts in zip(batch["shard"], batch["texts"], strict=True):
            matrix = self.encoder.encode(list(texts), show_progress_bar=False, **self.encode_options)
            shards.append(int(shard))
            vectors.append(np.ascontiguousarray(matrix, dtype=np.float32).tobytes())
        return {"shard": np.array(shards, dtype=np.int64), "vectors": np.array(vectors, dtype=object)}


@dataclass(frozen=True)
class Placement:
    """How the actor pool sits on the cluster."""

    workers: int
    threads: int
    device: str
    resources: dict[str, float]


def place_workers(
    cluster: dict[str, float], workers: int | None, threads: int | None, device: str | None
) -> Placement:
    """One GPU per actor when the cluster has GPUs (default: an actor per GPU) unless `device` says
    otherwise; else `workers` actors (default 2) sharing the cluster's CPUs evenly as threads."""
    gpus, cpus = int(cluster.get("GPU", 0)), int(cluster.get("CPU", 0))
    if device.startswith("cuda") if device else gpus > 0:
        workers = workers or max(gpus, 1)
        if workers > gpus:
            raise ValueError(f"{workers} GPU workers asked for, but the Ray cluster has {gpus} GPU(s)")
        return Placement(workers, threads or 1, device or "cuda", {"num_gpus": 1, "num_cpus": 1})
    workers = workers or max(1, min(DEFAULT_CPU_WORKERS, cpus))
    threads = threads or max(1, cpus // workers)
    if workers * threads > cpus:
        raise ValueError(
            f"{workers} workers x {threads} threads need {workers * threads} CPUs, but the Ray cluster "
            f"has {cpus}; ask for fewer workers or threads"
        )
    return Placement(workers, threads, device or "cpu", {"num_cpus": threads})


def _connect(ray: Any, address: str | None, num_cpus: int | None) -> bool:
    """Use the Ray already initialised here, or join `address` (or $RAY_ADDRESS), or start a local
    instance; True when this call started or joined one (and must shut it down)."""
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or "local"
    if address != "local":
        ray.init(address=address, logging_level=logging.WARNING)
        return True
    from ..inference.hardware import usable_cores

    ray.init(
        address="local",
        num_cpus=num_cpus or usable_cores(),
        include_dashboard=False,
        logging_level=logging.WARNING,
    )
    return True


def _probe_model(
    model: str | None, load_options: dict[str, Any], encode_options: dict[str, Any]
) -> tuple[str, int]:
    """(model folder, embedding length): the model is loaded once in the driver, so that a bad
    model, prompt name or truncate_dim fails before any cluster work."""
    from ..encoder import load_encoder

    encoder = load_encoder(model, device="cpu", **load_options)
    vector = encoder.encode(["probe"], show_progress_bar=False, **encode_options)
    return str(encoder.model_folder), int(np.asarray(vector).shape[-1])


@dataclass
class _Job:
    """What the driver needs while shards come back."""

    folder: Path
    corpus: Corpus
    shard_size: int
    dim: int

    def rows(self, shard: int) -> slice:
        return slice(shard * self.shard_size, min((shard + 1) * self.shard_size, len(self.corpus)))

    def missing(self, shards: int) -> list[int]:
        return [
            i
            for i in range(shards)
            if not shard_is_complete(
                self.folder / shard_name(i), self.rows(i).stop - self.rows(i).start, self.dim
            )
        ]


def _results(
    ray: Any,
    job: _Job,
    pending: list[int],
    placement: Placement,
    actor_args: dict[str, Any],
    progress_bars: bool,
) -> Iterator[dict[str, Any]]:
    """Run the actor pool over the pending shards; yield each shard's result as it arrives."""
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = progress_bars
    items = [{"shard": i, "texts": job.corpus.texts[job.rows(i)]} for i in pending]
    dataset = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
        ShardEncoder,
        fn_constructor_kwargs=actor_args,
        batch_size=1,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=placement.workers),
        **placement.resources,
    )
    rows = iter(dataset.iter_rows())
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except Exception as e:
            raise RayEncodeError(
                f"a Ray worker failed: {e}; shards written so far are kept, rerun to resume"
            ) from e
        yield row


def encode_with_ray(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output_dir: str | os.PathLike[str],
    *,
    model: str | None = None,
    workers: int | None = None,
    threads: int | None = None,
    device: str | None = None,
    shard_size: int = DEFAULT_SHARD_SIZE,
    batch_size: int | None = None,
    max_tokens: int | None = None,
    text_field: str = "text",
    id_field: str | None = "id",
    format: str = "auto",
    prompt_name: str | None = None,
    prompt: str | None = None,
    normalize_embeddings: bool = False,
    truncate_dim: int | None = None,
    backend: str = "torch",
    precision: str = "fp32",
    address: str | None = None,
    num_cpus: int | None = None,
    overwrite: bool = False,
    progress: Callable[[str], None] | None = print,
    progress_bars: bool = True,
) -> dict[str, Any]:
    """Encode `inputs` (files, folders or glob patterns of txt / jsonl / csv / tsv / parquet) into
    `output_dir/part-NNNNN.parquet` shards of `shard_size` rows (`id`, `embedding`) and a manifest.

    Resumable: shards already in `output_dir` are kept and only the missing ones are encoded; a folder
    made for other inputs, another model or other encode options is refused unless `overwrite`.

    Ray: a Ray already initialised in this process is used as it is; otherwise `address` (or
    $RAY_ADDRESS) is joined, or a local instance with `num_cpus` CPUs (default: the usable cores) is
    started, and shut down at the end. See `place_workers` for `workers`, `threads` and `device`.
    `progress` gets a line per shard (None: silent); `progress_bars` shows Ray Data's bars.

    Returns a summary: rows, shards encoded / skipped, temporary files removed, seconds, sentences/s
    (encoded rows over the whole call), and the placement.
    """
    for name, value in (("shard_size", shard_size), ("workers", workers), ("threads", threads)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, not {value}")
    say = progress or (lambda _line: None)
    start = time.perf_counter()
    ray = _import_ray()
    corpus = read_corpus(inputs, format=format, text_field=text_field, id_field=id_field)
    load_options: dict[str, Any] = {"backend": backend, "precision": precision}
    encode_options: dict[str, Any] = {
        "prompt_name": prompt_name,
        "prompt": prompt,
        "normalize_embeddings": normalize_embeddings,
        "truncate_dim": truncate_dim,
        "batch_size": batch_size,
        "max_tokens": max_tokens,
    }
    model_folder, dim = _probe_model(model, load_options, encode_options)
    shards = shard_count(len(corpus), shard_size)
    manifest = {
        "format": FORMAT,
        "model": model_folder,
        "dim": dim,
        "encode_options": {
            "prompt_name": prompt_name,
            "prompt": prompt,
            "normalize_embeddings": normalize_embeddings,
            "truncate_dim": truncate_dim,
            "backend": backend,
            "precision": precision,
        },
        "shard_size": shard_size,
        "total_rows": len(corpus),
        "shards": shards,
        "inputs_sha256": corpus.sha256,
        "inputs": corpus.files,
        "text_field": text_field,
        "id_field": id_field,
        "complete": False,
    }
    folder = Path(output_dir)
    job = _Job(folder, corpus, shard_size, dim)
    with locked(folder):
        prepare_folder(folder, manifest, overwrite=overwrite)
        removed = remove_temporary_files(folder)
        pending = job.missing(shards)
        say(
            f"{len(corpus):,} rows from {len(corpus.files)} file(s) -> {shards} shard(s) of up to "
            f"{shard_size:,} rows: {shards - len(pending)} already written, {len(pending)} to encode"
            + (f"; removed {removed} unfinished temporary file(s)" if removed else "")
        )
        summary: dict[str, Any] = {
            "output_dir": str(folder),
            "total_rows": len(corpus),
            "dim": dim,
            "shards": shards,
            "shards_skipped": shards - len(pending),
            "shards_encoded": 0,
            "rows_encoded": 0,
            "temporary_files_removed": removed,
        }
        if pending:
            actor_args = {
                "model": model_folder,
                "load_options": load_options,
                "encode_options": encode_options,
            }
            summary.update(
                _encode_pending(
                    ray,
                    job,
                    pending,
                    actor_args,
                    workers,
                    threads,
                    device,
                    address,
                    num_cpus,
                    say,
                    progress_bars,
                )
            )
        write_manifest(folder, {**manifest, "complete": True})
    seconds = time.perf_counter() - start
    summary["seconds"] = seconds
    summary["sentences_per_second"] = summary["rows_encoded"] / seconds if seconds > 0 else 0.0
    return summary


def _encode_pending(
    ray: Any,
    job: _Job,
    pending: list[int],
    actor_args: dict[str, Any],
    workers: int | None,
    threads: int | None,
    device: str | None,
    address: str | None,
    num_cpus: int | None,
    say: Callable[[str], None],
    progress_bars: bool,
) -> dict[str, Any]:
    """Encode the pending shards on Ray and write each as it comes back; return the run's figures."""
    started = _connect(ray, address, num_cpus)
    try:
        placement = place_workers(ray.cluster_resources(), workers, threads, device)
        say(f"Ray: {placement.workers} worker(s) x {placement.threads} thread(s) on {placement.device}")
        args = {**actor_args, "device": placement.device, "threads": placement.threads}
        begin = time.perf_counter()
        first: float | None = None
        rows = 0
        for done, result in enumerate(_results(ray, job, pending, placement, args, progress_bars), start=1):
            shard = int(result["shard"])
            span = job.rows(shard)
            vectors = np.frombuffer(result["vectors"], dtype=np.float32).reshape(-1, job.dim)
            write_shard(job.folder, shard, job.corpus.ids[span], vectors)
            rows += vectors.shape[0]
            first = first if first is not None else time.perf_counter() - begin
            say(f"shard {shard_name(shard)}: {vectors.shape[0]:,} rows written ({done}/{len(pending)})")
    finally:
        if started:
            ray.shutdown()
    return {
        "shards_encoded": len(pending),
        "rows_encoded": rows,
        "encode_seconds": time.perf_counter() - begin,
        "first_shard_seconds": first,
        "workers": placement.workers,
        "threads_per_worker": placement.threads,
        "device": placement.device,
    }
