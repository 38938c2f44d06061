"""Several encoder processes working on one corpus: one per GPU, or CPU processes with their own threads.

On many-core machines one process rarely keeps every core busy on sentence-length inputs (small
matmuls, Python between layers); several processes with a few threads each do. Each worker loads
the model once; the corpus is cut into slices that the workers take in turn, and the rows come
back in input order.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ..._util.cores import usable_cores
from ...inference.memory import release_freed_memory as release_memory

_WORKER: dict[str, Any] = {}


@contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    """`env` set while child processes start (they read it at start-up: glibc's malloc and oneDNN
    take these settings when they load, before any code of ours runs), then put back."""
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


PARENT_POLL_S = 0.25


def watch_parent(parent: int, poll_s: float = PARENT_POLL_S) -> threading.Thread:
    """A daemon thread that ends this process at once when `parent` is no longer its parent.

    A worker whose server was killed (`kill -9`: no shutdown, no pipe message) is re-parented to
    init or a subreaper; polling `getppid` notices within `poll_s`. Linux's parent-death signal
    (prctl PR_SET_PDEATHSIG) would be quicker but fires when the *thread* that started the worker
    ends, and workers are (re)started from request threads, so it would kill healthy workers."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    thread = threading.Thread(target=watch, name="munjang-parent-watch", daemon=True)
    thread.start()
    return thread


def _init_worker(
    model: str | None,
    device: str,
    threads: int,
    load_kwargs: dict[str, Any],
    parent: int | None = None,
) -> None:
    if parent is not None:
        watch_parent(parent)
    import torch

    from .encoder import load_encoder

    torch.set_num_threads(threads)
    _WORKER["encoder"] = load_encoder(model, device=device, **load_kwargs)


def _encode_slice(texts: list[str], kwargs: dict[str, Any]) -> np.ndarray:
    return np.asarray(_WORKER["encoder"].encode(texts, show_progress_bar=False, **kwargs), dtype=np.float32)


def _encode_tokenized(encoded: dict[str, list[list[int]]], kwargs: dict[str, Any]) -> np.ndarray:
    out = np.asarray(_WORKER["encoder"].encode_tokenized(encoded, **kwargs), dtype=np.float32)
    release_memory()
    return out


def _switch(backend: str, precision: str) -> None:
    """Run the worker's encoder on (backend, precision) from now on, built and warmed here, the
    backends it ran on before dropped (each holds a copy of the weights)."""
    encoder = _WORKER["encoder"]
    encoder.set_backend(backend, precision, **encoder.backend_options)
    encoder.warmup()
    encoder.release_backends(encoder.configuration())
    encoder.release_torch_weights()
    release_memory()


def _warmup() -> int:
    _WORKER["encoder"].warmup()
    if _WORKER["encoder"].release_torch_weights():  # an exported backend holds its own copy
        release_memory()
    return os.getpid()


class EncoderProcess:
    """One model in a process of its own, fed token ids (`encode_tokenized`).

    A server keeps its model here so that request handling (JSON, tokenization, the event loop)
    never competes with the model loop for the interpreter lock: with both in one process, the
    model waits for the lock after every operation (the server-load rows of docs/benchmarks.md
    compare the two).
    If the process dies it is started again on the next call, and that call fails.

    Served batches come in ever new shapes, and oneDNN caches a compiled kernel per shape (1,024 by
    default): the process keeps `primitive_cache` of them and two malloc arenas, so its memory
    levels off within a minute of traffic instead of growing for minutes with every new shape, at
    the same speed.
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        device: str = "cpu",
        threads: int | None = None,
        primitive_cache: int = 64,
        **load_kwargs: Any,
    ) -> None:
        import torch

        self._env = {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": str(primitive_cache), "MALLOC_ARENA_MAX": "2"}
        self._args: tuple[str, str, int, dict[str, Any], int] = (
            str(model),
            device,
            threads or torch.get_num_threads(),
            load_kwargs,
            os.getpid(),
        )
        self._start()

    def _start(self) -> None:
        with _environment(self._env):
            self._executor = ProcessPoolExecutor(
                max_workers=1,
                mp_context=mp.get_context("spawn"),
                initializer=_init_worker,
                initargs=self._args,
            )
            warm = self._executor.submit(_warmup)  # starts the process
        self.pid: int = warm.result()

    def encode_tokenized(self, encoded: dict[str, list[list[int]]], **kwargs: Any) -> np.ndarray:
        """`SentenceEncoder.encode_tokenized` in the model process."""
        try:
            return self._executor.submit(_encode_tokenized, encoded, kwargs).result()
        except BrokenProcessPool:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._start()
            raise RuntimeError("the model process stopped; it has been restarted") from None

    def switch(self, backend: str, precision: str) -> None:
        """Run on (backend, precision) from the next batch on (and after a restart). The switch waits
        for the batch in flight and holds the batches after it until the new backend is warm, so
        every call is answered, on the old backend or the new."""
        self._executor.submit(_switch, backend, precision).result()
        model, device, threads, load_kwargs, parent = self._args
        self._args = (
            model,
            device,
            threads,
            {**load_kwargs, "backend": backend, "precision": precision},
            parent,
        )

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


class EncodePool:
    """A pool of encoder processes; use as a context manager or call `close()`.

    `devices` lists one device per worker (["cuda:0", "cuda:1"]); without it, `processes` CPU workers
    (default: cores // threads_per_process) each run `threads_per_process` torch threads (default 1).
    `load_kwargs` go to `load_encoder` in every worker (backend, precision, pooling, ...).
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        devices: Sequence[str] | None = None,
        processes: int | None = None,
        threads_per_process: int | None = None,
        **load_kwargs: Any,
    ) -> None:
        cores = usable_cores()
        threads = threads_per_process or 1
        if threads < 1:
            raise ValueError(f"threads_per_process must be at least 1, not {threads}")
        if devices:
            worker_devices = list(devices)
        else:
            count = processes or max(1, cores // threads)
            if count < 1:
                raise ValueError(f"processes must be at least 1, not {count}")
            worker_devices = ["cpu"] * count
        self.devices = worker_devices
        context = mp.get_context("spawn")  # fork would copy torch's thread pools and CUDA state
        self._executors = [
            ProcessPoolExecutor(
                max_workers=1,
                mp_context=context,
                initializer=_init_worker,
                initargs=(None if model is None else str(model), device, threads, load_kwargs, os.getpid()),
            )
            for device in worker_devices
        ]

    def encode(
        self,
        sentences: Sequence[str],
        *,
        chunk_size: int = 2048,
        show_progress_bar: bool = False,
        **encode_kwargs: Any,
    ) -> np.ndarray:
        """Encode `sentences` across the workers (same arguments as `SentenceEncoder.encode`)."""
        texts = list(sentences)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"sentences[{i}] is {type(text).__name__}, not str")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, not {chunk_size}")
        slices = [(s, texts[s : s + chunk_size]) for s in range(0, len(texts), chunk_size)]
        futures = [
            (start, self._executors[i % len(self._executors)].submit(_encode_slice, part, encode_kwargs))
            for i, (start, part) in enumerate(slices)
        ]
        parts: list[np.ndarray] = []
        with tqdm(total=len(texts), desc="Encoding", unit="sent", disable=not show_progress_bar) as bar:
            for _, future in futures:
                parts.append(future.result())
                bar.update(len(parts[-1]))
        if not parts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.concatenate(parts)

    def close(self) -> None:
        for executor in self._executors:
            executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> EncodePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
