"""OpenVINO backend: the cached ONNX graph compiled by OpenVINO for the CPU.

OpenVINO reads the ONNX artefact directly. fp32 compiles the plain export with the inference
precision pinned to f32: on CPUs with bf16 support OpenVINO would otherwise run in bf16 without saying
so. bf16 compiles the same graph with the inference precision set to bf16 on CPUs that have bf16
instructions (AVX-512 BF16 or AMX): matmuls in bf16 with float accumulation. On such a CPU it is the
fastest graph at fp32 accuracy (bench/int8_variants.py; figures in docs/benchmarks.md); end to end it
stays closer to fp32 than int8, and needs no calibration. int8 compiles the static int8 graph
(`static_int8.py`: calibrated int8 activations and per-channel int8 weights on the MatMuls that tolerate
it, the rest in bf16 where the CPU has it, else f32), the fastest graph at the int8 accuracy bar. Without
NNCF (`pip install 'munjang[int8]'`), which builds that graph, int8 falls back, with a warning, to the
graph whose MatMul weights alone are int8: OpenVINO then quantizes activations on the fly in groups,
slower, and no faster than bf16 on a CPU with bf16 instructions.

Calls with many batches (`token_embeddings_many`, which `encode` uses) run on a second compilation of
the same graph with OpenVINO's throughput hint: one stream per thread on 2 threads (OpenVINO's choice
beyond), a batch in flight on each and one queued, results in input order. Streams never wait for each
other at a layer boundary and the caller pads and pools while they run, so a long call finishes sooner
than one batch at a time with every thread, with the same vectors. Single sentences and
one-batch calls keep the latency compilation, which gives every thread to the one request.

The graph is read from the IR that `openvino_ir.py` converts the ONNX artefact to once, its weights
mapped from disk rather than copied. `before_compile`, when given, runs once the files are ready and
before the first compilation: the encoder frees torch's copy of the weights there, so a process never
holds torch's weights and the compiled graph's at once (`SentenceEncoder.backend`).

Each of the two is compiled twice over, on first use: batches of long inputs (`LONG_BATCH_TOKENS`
wide or more) on a graph whose attention blocks OpenVINO's snippets fuse into one kernel, shorter ones
on a graph without snippets, since the fused kernel is the slower one on short inputs.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from importlib.util import find_spec
from itertools import chain, islice
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._util.extras import install_hint, require
from ..errors import MissingExtraError
from .base import BackendError, Batch, K
from .hardware import cpu_has_fast_bf16
from .memory import drop_file_pages
from .onnx_backend import check_precision
from .onnx_export import batch_arrays, onnx_artifact
from .openvino_ir import ir_artifact

logger = logging.getLogger(__name__)

# One synchronous request at a time: the latency hint gives it every thread (the throughput hint
# splits the threads into streams that a single request cannot use).
PERFORMANCE_HINT = "LATENCY"
# Batches at least this many tokens wide run on graphs compiled with OpenVINO's snippets, which fuse each
# attention block into one kernel: faster on long passages, slower on the short inputs sentences make,
# about even from 128 to 256 tokens (bench/openvino_snippets.py; figures in docs/benchmarks.md).
# Narrower batches run on graphs compiled without them.
LONG_BATCH_TOKENS = 192
# A call with at least this many batches per stream runs on the throughput-compiled model, its batches
# spread over streams of one or a few threads each: no stream waits for another at every layer, and
# the caller's Python work (padding, pooling) overlaps the model. Fewer batches than that would leave
# streams idle, so they take the latency model, which gives one batch every thread.
MIN_BATCHES_PER_STREAM = 2
# OpenVINO's CPU plugin keeps compiled executors per input shape, 5,000 by default: a server's batches
# come in ever new shapes, so a model process grew with every burst of traffic and never levelled.
# Kept to this many, its memory is flat at the same speed (bench/server_overload.py; docs/benchmarks.md).
RUNTIME_CACHE_CAPACITY = 64


def _copied(output: Any) -> torch.Tensor:
    """A float32 tensor of a request's output, copied: the request reuses its buffer on the next call."""
    return torch.from_numpy(np.array(output, dtype=np.float32, copy=True))


def _int8_variant() -> str:
    """The int8 graph to compile: static int8 where NNCF is installed, else int8 weights (warned once)."""
    if find_spec("nncf") is not None:
        return "int8-static"
    _warn_no_nncf()
    return "int8-weights"


@functools.cache
def _warn_no_nncf() -> None:
    logger.warning(
        "openvino int8 without NNCF runs int8 weights with dynamic activations (slower, less exact): "
        "%s for static int8",
        install_hint("nncf"),
    )


def _openvino() -> Any:
    try:
        return require("openvino")
    except MissingExtraError as e:
        raise BackendError(str(e)) from e


class OpenVinoBackend:
    """Token embeddings from OpenVINO on the CPU, compiled from the cached ONNX graph.

    `model_folder` is where the model was loaded from (see `OnnxBackend`); `threads` is OpenVINO's
    inference thread count (default torch's). Each calling thread gets its own infer request.
    """

    name = "openvino"

    def __init__(
        self,
        transformer: Any,
        model_folder: str | Path | None = None,
        precision: str = "fp32",
        threads: int | None = None,
        before_compile: Callable[[], None] | None = None,
    ) -> None:
        check_precision(self.name, precision)
        ov = _openvino()
        self.precision = precision
        self.threads = int(threads or torch.get_num_threads())
        self.hidden_size = int(transformer.hidden_size)
        variant = _int8_variant() if precision == "int8" else "fp32"
        # Float ops of the static int8 graph run in bf16 where the CPU has it, as the bf16 precision does.
        self._inference_precision = (
            "bf16" if precision == "bf16" or (variant == "int8-static" and cpu_has_fast_bf16()) else "f32"
        )
        self.variant = variant
        core = ov.Core()
        if precision == "bf16" and not cpu_has_fast_bf16():  # the same test "auto" makes
            raise BackendError(
                "the openvino backend's bf16 needs a CPU with bf16 instructions (AVX-512 BF16 or AMX); "
                "this one has none: use precision fp32 or int8"
            )
        core.set_property({"ENABLE_MMAP": True})  # IR weights mapped from disk, not copied
        self._read: tuple[Path, Any] | None = None  # the graph last read, shared by its compilations
        self.model_path = onnx_artifact(transformer, model_folder, variant)  # the ONNX artefact
        self.ir_path, self._weights_path = self._ir(ov, core, transformer, model_folder, variant)
        if before_compile is not None:
            before_compile()
        try:
            compiled = self._compile(core, self.ir_path)
        except Exception as e:  # an IR that passed its checks yet does not load: converted once more
            logger.warning("OpenVINO could not load %s (%s); converting it again", self.ir_path, e)
            self._read = None
            self.ir_path, self._weights_path = ir_artifact(ov, core, self.model_path, rebuild=True)
            try:
                compiled = self._compile(core, self.ir_path)
            except Exception as again:
                raise BackendError(f"OpenVINO cannot load {self.ir_path}: {again}") from again
        self._inputs = [port.get_any_name() for port in compiled.inputs]
        self._local = threading.local()
        self._core = core
        # (hint, long inputs) -> the graph compiled for them; the others are built on first use.
        self._models: dict[tuple[str, bool], Any] = {(PERFORMANCE_HINT, False): compiled}
        self._models_lock = threading.Lock()

    def _ir(self, ov: Any, core: Any, transformer: Any, model_folder: Any, variant: str) -> tuple[Path, Path]:
        """The IR of the ONNX artefact; an ONNX file that passed its hash check yet does not convert
        is exported again once (while the torch weights are still there to export)."""
        try:
            return ir_artifact(ov, core, self.model_path)
        except Exception as e:
            logger.warning("OpenVINO could not read %s (%s); rebuilding it", self.model_path, e)
        self.model_path = onnx_artifact(transformer, model_folder, variant, rebuild=True)
        try:
            return ir_artifact(ov, core, self.model_path, rebuild=True)
        except Exception as again:
            raise BackendError(f"OpenVINO cannot load {self.model_path}: {again}") from again

    def _compile(self, core: Any, path: Path, hint: str = PERFORMANCE_HINT, long: bool = False) -> Any:
        config: dict[str, Any] = {
            "PERFORMANCE_HINT": hint,
            "INFERENCE_NUM_THREADS": self.threads,
            "INFERENCE_PRECISION_HINT": self._inference_precision,
            "SNIPPETS_MODE": "ENABLE" if long else "DISABLE",
            "CPU_RUNTIME_CACHE_CAPACITY": RUNTIME_CACHE_CAPACITY,
        }
        if hint == "THROUGHPUT" and self.threads <= 2:
            config["NUM_STREAMS"] = self.threads
        compiled = core.compile_model(self._graph(core, path), "CPU", config)
        # Compiling read every page of the mapped weights; those it uses as they are (the embedding
        # table's rows) fault back in from the page cache when a batch reads them.
        drop_file_pages(str(self._weights_path.resolve()))
        return compiled

    def _graph(self, core: Any, path: Path) -> Any:
        """The graph at `path`, read once: every compilation of it shares the constants that it uses
        as they are (the embedding table, for one) instead of reading its own copy."""
        graph = self._read
        if graph is None or graph[0] != path:
            graph = self._read = (path, core.read_model(str(path), str(self._weights_path)))
        return graph[1]

    def _model(self, hint: str, long: bool) -> Any:
        """The graph compiled with `hint` for batches of long (or short) inputs, built on first use
        (each compilation keeps its own packed copy of the weights it multiplies)."""
        with self._models_lock:
            compiled = self._models.get((hint, long))
            if compiled is None:
                compiled = self._models[hint, long] = self._compile(self._core, self.ir_path, hint, long)
            return compiled

    @property
    def streams(self) -> int:
        """Streams of the throughput model: one per thread up to 2 threads (the best setting on a
        2-core machine, and OpenVINO's own choice there); beyond that OpenVINO's choice for the model
        and the cores, read from the throughput compilation (built here if it is not yet)."""
        if self.threads <= 2:
            return self.threads
        return int(self._throughput_model().get_property("NUM_STREAMS"))

    def _throughput_model(self) -> Any:
        """The graph compiled for several requests at once (short inputs), built on first use."""
        return self._model("THROUGHPUT", False)

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def _request(self, long: bool) -> Any:
        """This thread's request on the latency graph for long (or short) inputs."""
        requests = self._local.__dict__.setdefault("requests", {})
        request = requests.get(long)
        if request is None:
            request = requests[long] = self._model(PERFORMANCE_HINT, long).create_infer_request()
        return request

    def token_embeddings(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """float32 (batch, seq, hidden) token vectors of a padded batch."""
        rows, width = batch["input_ids"].shape
        if rows == 0 or width == 0:
            return torch.zeros((rows, width, self.hidden_size), dtype=torch.float32)
        request = self._request(width >= LONG_BATCH_TOKENS)
        request.infer(batch_arrays(batch, self._inputs))
        return _copied(request.get_output_tensor(0).data)

    def token_embeddings_many(
        self, items: Iterable[tuple[K, Batch]]
    ) -> Iterator[tuple[K, Batch, torch.Tensor]]:
        """(key, batch, token vectors) in input order, batches run on all streams at once.

        Calls with few batches (or one stream) run one batch at a time on the latency model.
        """
        items = iter(items)
        streams = self.streams
        head = list(islice(items, MIN_BATCHES_PER_STREAM * streams))
        if streams < 2 or len(head) < MIN_BATCHES_PER_STREAM * streams:
            for key, batch in chain(head, items):
                yield key, batch, self.token_embeddings(batch)
            return
        pools = self._local.__dict__.pop("stream_requests", {})  # held by this call while it runs
        free: dict[bool, deque[Any]] = {}
        pending: deque[tuple[Any, K, Batch, bool]] = deque()
        completed = False
        try:
            for key, batch in chain(head, items):
                if min(batch["input_ids"].shape) == 0:  # nothing to run: zeros, in order
                    while pending:
                        yield self._finish(*pending.popleft(), free)
                    yield key, batch, self.token_embeddings(batch)
                    continue
                long = batch["input_ids"].shape[1] >= LONG_BATCH_TOKENS
                if long not in free:
                    free[long] = deque(pools.get(long) or self._stream_requests(long))
                while len(pending) > streams or not free[long]:  # one batch queued beyond the streams
                    yield self._finish(*pending.popleft(), free)
                request = free[long].popleft()
                request.start_async(batch_arrays(batch, self._inputs))
                pending.append((request, key, batch, long))
            while pending:
                yield self._finish(*pending.popleft(), free)
            completed = True
        finally:
            if completed:  # reused by this thread's next call
                self._local.stream_requests = {**pools, **{long: list(q) for long, q in free.items()}}
            else:  # the caller stopped early, or a request failed: its requests are dropped
                for request, _, _, _ in pending:  # let what runs finish (cancelled requests break on reuse)
                    with contextlib.suppress(RuntimeError):
                        request.wait()

    def _stream_requests(self, long: bool) -> list[Any]:
        """Requests on the throughput graph for long (or short) inputs: one per stream and one more, so
        a batch is queued whenever the caller is busy with a finished one. They are this thread's, held
        by a call while it runs (a second call meanwhile, say from another generator, makes its own)."""
        compiled = self._model("THROUGHPUT", long)
        return [compiled.create_infer_request() for _ in range(self.streams + 1)]

    def _finish(
        self, request: Any, key: K, batch: Batch, long: bool, free: dict[bool, deque[Any]]
    ) -> tuple[K, Batch, torch.Tensor]:
        request.wait()
        tokens = _copied(request.get_output_tensor(0).data)
        free[long].append(request)
        return key, batch, tokens

    def __repr__(self) -> str:
        return (
            f"OpenVinoBackend(precision={self.precision!r}, graph={self.variant!r}, threads={self.threads}, "
            f"model={self.model_path})"
        )
