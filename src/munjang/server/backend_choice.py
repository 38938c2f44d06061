"""Serving before the automatic backend choice is known, and switching to it when it is.

The first time a model is served on a machine, "auto" has not measured its candidates yet, and
measuring them (every runtime and precision, two rounds over the calibration texts) takes a minute
or more on a laptop's cores. A server does not wait for it: a model whose choice is neither made in
this process nor cached serves on torch fp32 (exact, and what "auto" falls back to anyway) from the
moment it is loaded, while a separate process measures the candidates at low priority (nice 10)
and caches the choice as any first use would. The server then builds and warms the chosen backend,
in its own process and then in each model process one at a time, and switches to it: an encode call
already running keeps the backend it started on, the next one runs on the new one, so every
request during the switch is answered. The candidates that were not kept live and die in the
measuring process, so none of their copies of the weights stays in the server.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from ..encoders.dense.backend_selection import AUTO
from ..encoders.dense.encoder import SentenceEncoder
from ..encoders.dense.pool import PARENT_POLL_S, EncoderProcess
from ..inference.memory import release_freed_memory as release_memory
from ..modules import Transformer

logger = logging.getLogger("munjang.server")

PROVISIONAL = ("torch", "fp32")
# The measuring process watches the server (argv[3]) before its first import: importing munjang
# (torch, transformers) takes seconds, and a server killed meanwhile must not leave it behind.
MEASURING_PROGRAM = """import os, sys, threading, time
def watch(parent=int(sys.argv[3])):
    while os.getppid() == parent:
        time.sleep({poll})
    os._exit(1)
threading.Thread(target=watch, daemon=True).start()
from {module} import measure_main
measure_main(sys.argv[1:])
"""
NICE = 10
NICE_ENV = "MUNJANG_MEASURE_NICE"  # the measuring process's niceness, when not NICE


def needs_measurement(encoder: SentenceEncoder) -> bool:
    """Whether `encoder` runs "auto" on a choice that would be measured now (not made, not cached)."""
    return (
        (encoder.backend_name, encoder.precision) == (AUTO, AUTO)
        and isinstance(encoder.input_module, Transformer)
        and encoder.model_folder is not None
        and encoder.known_auto_choice() is None
    )


class BackgroundChoice:
    """Measures the automatic choice of each of `encoders` (served meanwhile on torch fp32) in a
    low-priority process (`nice`; default `$MUNJANG_MEASURE_NICE`, else 10), one model at a time,
    then switches the encoder and its model processes to it. `status(name)` says where each stands,
    for /v1/models."""

    def __init__(self, encoders: dict[str, SentenceEncoder], nice: int | None = None) -> None:
        self._nice = int(os.environ.get(NICE_ENV, NICE)) if nice is None else nice
        self._pending = {name: (encoder, dict(encoder.backend_options)) for name, encoder in encoders.items()}
        self._processes: dict[str, list[EncoderProcess]] = {}
        self._states = {
            name: "measuring in the background; serving torch fp32 meanwhile" for name in encoders
        }
        self._child: subprocess.Popen[bytes] | None = None
        self._closed = False
        for encoder, options in self._pending.values():
            encoder.set_backend(*PROVISIONAL, **options)
        self._thread = threading.Thread(target=self._run, name="munjang-backend-choice", daemon=True)

    @staticmethod
    def provisional(encoders: dict[str, SentenceEncoder]) -> dict[str, SentenceEncoder]:
        """The encoders among `encoders` whose automatic choice is still to be measured."""
        return {name: encoder for name, encoder in encoders.items() if needs_measurement(encoder)}

    def start(self, processes: dict[str, list[EncoderProcess]]) -> None:
        """Start measuring; the model processes (started on the provisional backend) switch too."""
        self._processes = processes
        if self._pending:
            self._thread.start()

    def status(self, name: str) -> str | None:
        """What is happening to `name`'s backend choice (None: nothing in the background)."""
        return self._states.get(name)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for every switch; True when done (or nothing was started)."""
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self) -> None:
        self._closed = True
        child = self._child
        if child is not None and child.poll() is None:
            child.kill()

    def _run(self) -> None:
        for name, (encoder, options) in self._pending.items():
            if self._closed:
                return
            started = time.monotonic()
            try:
                self._measure(encoder)
                choice = encoder.known_auto_choice()
                if choice is None:
                    raise RuntimeError("the measuring process cached no choice")
                switch(encoder, options, self._processes.get(name, []))
            except Exception as e:  # stay on the provisional backend: correct, only slower
                if self._closed:
                    return
                self._states[name] = f"torch fp32 (the background measurement failed: {e})"
                logger.warning("%s: the backend measurement failed, staying on torch fp32: %s", name, e)
                continue
            chosen = f"{choice.backend} {choice.precision}"
            self._states[name] = f"{chosen}, measured in the background"
            logger.warning(
                "%s: switched to %s, the fastest accurate backend here (measured in %.0f s, cached)",
                name,
                chosen,
                time.monotonic() - started,
            )

    def _measure(self, encoder: SentenceEncoder) -> None:
        """Run the measurement in a process of its own at low priority; it caches the choice."""
        program = MEASURING_PROGRAM.format(module=__name__, poll=PARENT_POLL_S)
        folder, device = str(encoder.model_folder), str(encoder.device)
        command = [sys.executable, "-c", program, folder, device, str(os.getpid()), str(self._nice)]
        logger.warning(
            "measuring the backends of %s in the background (a minute or two at low priority; "
            "serving on torch fp32 meanwhile)",
            encoder.model_folder,
        )
        self._child = subprocess.Popen(command, stdin=subprocess.DEVNULL)
        status = self._child.wait()
        if status != 0:
            raise RuntimeError(f"the measuring process exited with {status}")


def backend_status(name: str, settings: Any) -> str:
    """What the served model `name` runs on, for /v1/models; never starts a measurement."""
    background: BackgroundChoice | None = settings.background_choice
    status = background.status(name) if background is not None else None
    if status is not None:
        return status
    encoder = settings.models[name]
    if not isinstance(encoder, SentenceEncoder):  # a classical encoder: numpy arrays, nothing to choose
        return "numpy"
    if (encoder.backend_name, encoder.precision) == (AUTO, AUTO) and isinstance(
        encoder.input_module, Transformer
    ):
        choice = encoder.known_auto_choice()
        if choice is None:
            return "auto (not measured yet)"
        return f"{choice.backend} {choice.precision} ({choice.describe()['chosen_by']})"
    backend, precision = encoder.configuration()
    return f"{backend} {precision}"


def switch(encoder: SentenceEncoder, options: dict[str, Any], processes: Sequence[EncoderProcess]) -> None:
    """Move `encoder` (on the provisional backend) and its model processes to its automatic choice,
    building and warming the new backend before any call runs on it, and dropping the old one."""
    choice = encoder.known_auto_choice()
    if choice is None:
        raise RuntimeError("no automatic choice to switch to")
    chosen = (choice.backend, choice.precision)
    for process in processes:  # one at a time: the others keep serving
        process.switch(*chosen)
    encoder.warmup(*chosen)  # built under the same options as "auto" will use: reused, not rebuilt
    encoder.set_backend(AUTO, AUTO, **options)
    encoder.release_backends(encoder.configuration())
    encoder.release_torch_weights()  # the chosen backend, if exported, holds its own copy
    release_memory()


def measure_main(argv: list[str]) -> None:
    """The measuring process (argv: FOLDER DEVICE SERVER_PID NICE; MEASURING_PROGRAM watches the
    server): measure and cache the choice, then exit."""
    os.nice(int(argv[3]))
    from ..encoders.dense.encoder import load_encoder

    encoder = load_encoder(argv[0], device=argv[1], backend=AUTO, precision=AUTO)
    encoder.auto_choice()
