"""Encode a large corpus on a Ray cluster (Ray Data, an actor pool with one model per actor) into
resumable parquet shards.

The driver reads and checks the whole corpus first (a bad row fails before any work starts), cuts it
into fixed-size shards by row order, and sends only the shards that are not on disk yet to the actor
pool; each actor encodes a whole shard (length-sorted, token-budget batches within it) and sends the
vectors back, and the driver writes the shard atomically. A killed run therefore loses at most the
shards in flight, and its rerun encodes only those. The driver writes every file, so the output folder
needs to be reachable from the driver only, also on a remote cluster (where munjang must be installed
on the workers). The driver holds the corpus text in memory (about its size on disk, plus Ray's copy
of the shards still to encode).

Ray is an optional dependency (`pip install 'munjang[ray]'`), imported only when used.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._util.extras import require
from ..errors import MunjangError
from .corpus import Corpus, read_corpus
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
CONNECT_TIMEOUT_S = 10.0  # how long a cluster address may take to accept a TCP connection


class RayEncodeError(MunjangError, RuntimeError):
    """A Ray worker failed; the shards written so far are kept and a rerun continues from them."""


def _import_ray() -> Any:
    return require("ray")


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
        from ..encoders.dense.encoder import load_encoder

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
        # Ray shows each actor only its own GPU, as device 0: "cuda:N" would name a GPU it cannot see.
        return Placement(workers, threads or 1, "cuda", {"num_gpus": 1, "num_cpus": 1})
    workers = workers or max(1, min(DEFAULT_CPU_WORKERS, cpus))
    threads = threads or max(1, cpus // workers)
    if workers * threads > cpus:
        raise ValueError(
            f"{workers} workers x {threads} threads need {workers * threads} CPUs, but the Ray cluster "
            f"has {cpus}; ask for fewer workers or threads"
        )
    return Placement(workers, threads, device or "cpu", {"num_cpus": threads})


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise MunjangError at once when nothing listens at a host:port cluster address (Ray itself
    retries an unreachable address for minutes before it gives up); "auto" and other forms pass."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        raise MunjangError(f"cannot reach the Ray cluster at {address}: {e}") from e


def _connect(ray: Any, address: str | None, num_cpus: int | None) -> bool:
    """Use the Ray already initialised here, or join `address` (or $RAY_ADDRESS), or start a local
    instance; True when this call started or joined one (and must shut it down)."""
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or "local"
    if address != "local":
        check_reachable(address)
        ray.init(address=address, logging_level=logging.WARNING)
        return True
    from .._util.cores import usable_cores

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
    from ..encoders.dense.encoder import load_encoder

    encoder = load_encoder(model, device="cpu", **load_options)
    vector = encoder.encode(["probe"], show_progress_bar=False, **encode_options)
    return str(encoder.model_folder), int(np.asarray(vector).shape[-1])


@dataclass(frozen=True)
class _RayOptions:
    """Where and how wide the actor pool runs (see `encode_with_ray`)."""

    address: str | None
    num_cpus: int | None
    workers: int | None
    threads: int | None
    device: str | None
    progress_bars: bool


@dataclass
class _Job:
    """One output folder's work: the corpus, how it is cut, and what each actor loads and runs."""

    folder: Path
    corpus: Corpus
    shard_size: int
    dim: int
    actor_args: dict[str, Any]

    @property
    def shards(self) -> int:
        return shard_count(len(self.corpus), self.shard_size)

    def rows(self, shard: int) -> slice:
        return slice(shard * self.shard_size, min((shard + 1) * self.shard_size, len(self.corpus)))

    def size(self, shard: int) -> int:
        rows = self.rows(shard)
        return rows.stop - rows.start

    def missing(self) -> list[int]:
        """Shards without a complete file on disk, in order."""
        return [
            i
            for i in range(self.shards)
            if not shard_is_complete(self.folder / shard_name(i), self.size(i), self.dim)
        ]


def _results(ray: Any, job: _Job, pending: list[int], placement: Placement) -> Iterator[dict[str, Any]]:
    """Run the actor pool over the pending shards; yield each shard's result as it arrives."""
    items = [{"shard": i, "texts": job.corpus.texts[job.rows(i)]} for i in pending]
    dataset = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
        ShardEncoder,
        fn_constructor_kwargs={**job.actor_args, "device": placement.device, "threads": placement.threads},
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
                f"a Ray worker failed: {e}; the shards written so far are kept, rerun to resume"
            ) from e
        yield row


def _encode_pending(
    ray: Any, job: _Job, pending: list[int], options: _RayOptions, say: Callable[[str], None]
) -> dict[str, Any]:
    """Encode the pending shards on Ray, writing each as it comes back; the run's figures."""
    started = _connect(ray, options.address, options.num_cpus)
    context = ray.data.DataContext.get_current()
    bars = context.enable_progress_bars
    context.enable_progress_bars = options.progress_bars
    try:
        placement = place_workers(ray.cluster_resources(), options.workers, options.threads, options.device)
        say(f"Ray: {placement.workers} worker(s) x {placement.threads} thread(s) on {placement.device}")
        begin = time.perf_counter()
        first: float | None = None
        rows = 0
        for done, result in enumerate(_results(ray, job, pending, placement), start=1):
            shard = int(result["shard"])
            vectors = np.frombuffer(result["vectors"], dtype=np.float32).reshape(-1, job.dim)
            write_shard(job.folder, shard, job.corpus.ids[job.rows(shard)], vectors)
            rows += vectors.shape[0]
            first = first if first is not None else time.perf_counter() - begin
            say(f"shard {shard_name(shard)}: {vectors.shape[0]:,} rows written ({done}/{len(pending)})")
        return {
            "shards_encoded": len(pending),
            "rows_encoded": rows,
            "encode_seconds": time.perf_counter() - begin,
            "first_shard_seconds": first,
            "workers": placement.workers,
            "threads_per_worker": placement.threads,
            "device": placement.device,
        }
    finally:
        context.enable_progress_bars = bars
        if started:
            ray.shutdown()


def _manifest(
    job: _Job, model_folder: str, identity: dict[str, Any], fields: dict[str, Any]
) -> dict[str, Any]:
    """What the folder's shards are: the keys a rerun must match (`shards.IDENTITY_KEYS`) and a record
    of the input files."""
    return {
        "format": FORMAT,
        "model": model_folder,
        "dim": job.dim,
        "encode_options": identity,
        "shard_size": job.shard_size,
        "total_rows": len(job.corpus),
        "shards": job.shards,
        "inputs_sha256": job.corpus.sha256,
        "inputs": job.corpus.files,
        **fields,
        "complete": False,
    }


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
    backend: str | None = None,
    precision: str | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
    overwrite: bool = False,
    progress: Callable[[str], None] | None = print,
    progress_bars: bool = True,
) -> dict[str, Any]:
    """Encode `inputs` (files, folders or glob patterns of txt / jsonl / csv / tsv / parquet) into
    `output_dir/part-NNNNN.parquet` shards of `shard_size` rows (`id`, `embedding`) and a manifest.

    Resumable: shards already in `output_dir` are kept and only the missing ones are encoded (the
    worker count may change between runs); a folder made for other inputs, another model or other
    encode options is refused unless `overwrite`, which starts it over.

    Ray: a Ray already initialised in this process is used as it is; otherwise `address` (or
    $RAY_ADDRESS) is joined, or a local instance with `num_cpus` CPUs (default: the usable cores) is
    started, and shut down at the end. See `place_workers` for `workers`, `threads` and `device`.
    `progress` gets a line per shard (None: silent); `progress_bars` shows Ray Data's bars.

    Returns a summary: rows, shards encoded / skipped, temporary files removed, seconds, sentences/s
    (encoded rows over the whole call), and the placement when anything was encoded.
    """
    for name, value in (("shard_size", shard_size), ("workers", workers), ("threads", threads)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, not {value}")
    say = progress or (lambda _line: None)
    start = time.perf_counter()
    ray = _import_ray()
    corpus = read_corpus(inputs, format=format, text_field=text_field, id_field=id_field)
    identity: dict[str, Any] = {
        "prompt_name": prompt_name,
        "prompt": prompt,
        "normalize_embeddings": normalize_embeddings,
        "truncate_dim": truncate_dim,
    }
    load_options = {"backend": backend, "precision": precision}
    encode_options = {**identity, "batch_size": batch_size, "max_tokens": max_tokens}
    model_folder, dim = _probe_model(model, load_options, encode_options)
    actor_args = {"model": model_folder, "load_options": load_options, "encode_options": encode_options}
    job = _Job(Path(output_dir), corpus, shard_size, dim, actor_args)
    manifest = _manifest(
        job, model_folder, {**identity, **load_options}, {"text_field": text_field, "id_field": id_field}
    )
    with locked(job.folder):
        prepare_folder(job.folder, manifest, overwrite=overwrite)
        removed = remove_temporary_files(job.folder)
        pending = job.missing()
        say(
            f"{len(corpus):,} rows from {len(corpus.files)} file(s) -> {job.shards} shard(s) of up to "
            f"{shard_size:,} rows: {job.shards - len(pending)} already written, {len(pending)} to encode"
            + (f"; removed {removed} unfinished temporary file(s)" if removed else "")
        )
        summary: dict[str, Any] = {
            "output_dir": str(job.folder),
            "total_rows": len(corpus),
            "dim": dim,
            "shards": job.shards,
            "shards_skipped": job.shards - len(pending),
            "shards_encoded": 0,
            "rows_encoded": 0,
            "temporary_files_removed": removed,
        }
        if pending:
            options = _RayOptions(address, num_cpus, workers, threads, device, progress_bars)
            summary.update(_encode_pending(ray, job, pending, options, say))
        write_manifest(job.folder, {**manifest, "complete": True})
    seconds = time.perf_counter() - start
    summary["seconds"] = seconds
    summary["sentences_per_second"] = summary["rows_encoded"] / seconds if seconds > 0 else 0.0
    return summary
