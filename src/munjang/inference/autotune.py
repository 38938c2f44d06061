"""The automatic backend: the fastest (backend, precision) that keeps fp32 accuracy, measured once per
model and machine.

Which runtime and precision is fastest depends on the CPU (bf16 or int8 instructions, cores), the
installed runtimes and the model, and a fast configuration is only worth having if its vectors stay
those of fp32. So nothing is assumed: every candidate available here encodes a bundled calibration
set of Korean and English texts of mixed lengths; a candidate is accurate when its normalized
vectors have cosine to torch fp32 of at least `MEAN_COSINE` on average and `MIN_COSINE` for every
text; the accurate candidate with the highest throughput (best of `ROUNDS` interleaved rounds, so a
busy moment hurts all candidates alike) is chosen. torch fp32 is the reference and always accurate,
so there is always an answer.

int8 is not a candidate. Its rounding error was above the bar on every model measured, static int8
included (docs/benchmarks.md, the automatic choice's row), so it never won, while calibrating its
static graph was most of a model's first use. It stays one argument away: `precision="int8"` with
backend "openvino" or "onnx".

The choice is cached in `$MUNJANG_CACHE/autotune/` under the model's weights fingerprint and the
machine (CPU model and flags, cores, device, runtime versions): the next process reads it instead of
measuring again; another machine, another runtime version or other weights measure afresh.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import torch
from filelock import FileLock

from .._util.atomic import atomic_write
from .._util.cores import usable_cores
from .._util.paths import cache_root
from .calibration import calibration_texts
from .hardware import cpu_flags, cpu_has_fast_bf16

logger = logging.getLogger(__name__)

MEAN_COSINE = 0.9999
MIN_COSINE = 0.999
ROUNDS = 2
# Measured again after the first round: candidates with at least this share of the fastest one's speed.
CONTENDER = 0.6
# Bump when the candidates, the calibration set or the bar change, so older choices are measured again.
AUTOTUNE_FORMAT = 3
# What `munjang info` says beside the trials, so nobody wonders where int8 went.
NOT_MEASURED = (
    "int8: not a candidate (its rounding error was above this bar on every model measured); "
    "backend openvino (or onnx) with precision int8 runs it"
)
RELEVANT_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_int8")

# Measures one configuration: (backend, precision, texts) -> (L2-normalized vectors, seconds).
Measure = Callable[[str, str, Sequence[str]], tuple[np.ndarray, float]]


@dataclass
class Trial:
    """One candidate's measurement (error: why it could not run here)."""

    backend: str
    precision: str
    mean_cosine: float | None = None
    min_cosine: float | None = None
    sentences_per_s: float | None = None
    error: str | None = None

    @property
    def accurate(self) -> bool:
        return (
            self.error is None
            and self.mean_cosine is not None
            and self.min_cosine is not None
            and self.mean_cosine >= MEAN_COSINE
            and self.min_cosine >= MIN_COSINE
        )


@dataclass
class Choice:
    """The configuration `encode` runs on under backend "auto", and the measurements behind it."""

    backend: str
    precision: str
    trials: list[Trial] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=dict)
    measured_at: str = ""
    cached: bool = False

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "precision": self.precision,
            "chosen_by": "auto (read from the cache)" if self.cached else "auto (measured)",
            "measured_at": self.measured_at,
            "bar": {"mean_cosine": MEAN_COSINE, "min_cosine": MIN_COSINE},
            "trials": [asdict(t) for t in self.trials],
            "not_measured": NOT_MEASURED,
        }


def runtime_available(backend: str) -> bool:
    """Whether the runtime a backend needs is installed (torch always is)."""
    module = {"onnx": "onnxruntime", "openvino": "openvino"}.get(backend)
    return module is None or find_spec(module) is not None


def candidates(device: torch.device) -> list[tuple[str, str]]:
    """The configurations worth measuring on `device`, reference (torch fp32) first.

    bf16 only where the CPU has bf16 instructions (elsewhere it is emulated, and slower than fp32);
    ONNX Runtime and OpenVINO only where installed; on a GPU, torch's own precisions; never int8
    (see the module's docstring)."""
    if device.type == "cuda":
        half = ["bf16"] if torch.cuda.is_bf16_supported() else []
        return [("torch", "fp32"), *[("torch", p) for p in [*half, "fp16"]]]
    if device.type != "cpu":
        return [("torch", "fp32")]
    bf16 = cpu_has_fast_bf16()
    found = [("torch", "fp32")]
    if bf16:
        found.append(("torch", "bf16"))
    if runtime_available("openvino"):
        found += [("openvino", "fp32")] + ([("openvino", "bf16")] if bf16 else [])
    if runtime_available("onnx"):
        found.append(("onnx", "fp32"))
    return found


def machine_key(device: torch.device) -> dict[str, Any]:
    """What makes a measurement valid only here: CPU, cores, device and runtime versions."""
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str | None] = {}
    for package in ("torch", "openvino", "onnxruntime", "nncf", "munjang"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    key: dict[str, Any] = {
        "cpu": cpu,
        "cores": usable_cores(),
        "flags": sorted(set(RELEVANT_FLAGS) & cpu_flags()),
        "device": str(device),
        "versions": versions,
        "format": AUTOTUNE_FORMAT,
    }
    if device.type == "cuda":
        key["gpu"] = torch.cuda.get_device_name(device)
    return key


def cache_path(fingerprint: str, machine: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps([fingerprint, machine], sort_keys=True).encode()).hexdigest()
    return cache_root() / "autotune" / f"{digest[:32]}.json"


def measure_all(measure: Measure, configs: Sequence[tuple[str, str]], texts: Sequence[str]) -> list[Trial]:
    """Accuracy of every configuration against the first (the reference), then the throughput of the
    accurate ones: a first round for all, then `ROUNDS - 1` more for those within `CONTENDER` of the
    fastest (a candidate far behind is not measured again)."""
    started = time.perf_counter()
    reference, one_pass = measure(*configs[0], texts)
    trials: list[Trial] = [Trial(*configs[0], mean_cosine=1.0, min_cosine=1.0)]
    for done, (backend, precision) in enumerate(configs[1:], start=1):
        _progress(done, len(configs), time.perf_counter() - started, one_pass)
        trial = Trial(backend, precision)
        try:
            vectors, _ = measure(backend, precision, texts)  # also builds and warms the backend
        except Exception as e:  # a runtime that cannot export or run this model is skipped, not fatal
            trial.error = f"{type(e).__name__}: {e}"[:300]
            logger.info("autotune: %s %s cannot run here: %s", backend, precision, trial.error)
        else:
            cosine = np.sum(vectors * reference, axis=1)
            trial.mean_cosine, trial.min_cosine = (
                round(float(cosine.mean()), 7),
                round(float(cosine.min()), 7),
            )
        trials.append(trial)
    best: dict[int, float] = {}
    for round_ in range(ROUNDS):
        fastest = min(best.values(), default=0.0)
        for i, trial in enumerate(trials):
            if not trial.accurate or (round_ and best[i] > fastest / CONTENDER):
                continue
            _, seconds = measure(trial.backend, trial.precision, texts)
            best[i] = min(best.get(i, float("inf")), seconds)
    for i, seconds in best.items():
        trials[i].sentences_per_s = round(len(texts) / max(seconds, 1e-9), 1)
    return trials


def _progress(done: int, total: int, elapsed: float, one_pass: float) -> None:
    """One log line per candidate: how far the measurement is and about how long it has left (the
    candidates still to build at the pace so far, then the timed rounds at about one pass each)."""
    left = elapsed / done * (total - done) + ROUNDS * total * one_pass
    logger.warning(
        "autotune: candidate %d of %d, %.0f s so far, about %.0f s left", done + 1, total, elapsed, left
    )


def pick(trials: Sequence[Trial]) -> Trial:
    """The accurate trial with the highest throughput (the reference, first, wins ties)."""
    accurate = [t for t in trials if t.accurate and t.sentences_per_s is not None]
    if not accurate:
        return trials[0]
    return max(accurate, key=lambda t: t.sentences_per_s or 0.0)


def choose(
    measure: Measure,
    fingerprint: str | None,
    device: torch.device,
    configs: Sequence[tuple[str, str]] | None = None,
    texts: Sequence[str] | None = None,
) -> Choice:
    """The cached choice for this model (`fingerprint`; None: never cached) and machine, or a new
    measurement, cached. Processes that start together measure once: the others wait on a file lock."""
    configs = list(configs or candidates(device))
    machine = machine_key(device)
    if fingerprint is None or len(configs) == 1:
        return _measured(measure, configs, texts, machine)
    path = cache_path(fingerprint, machine)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=1800):
        found = _read(path, configs)
        if found is not None:
            return found
        choice = _measured(measure, configs, texts, machine)
        payload = {"configs": configs, **asdict(choice), "cached": False}
        text = json.dumps(payload, indent=2)
        atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        return choice


def cached_choice(
    fingerprint: str | None, device: torch.device, configs: Sequence[tuple[str, str]] | None = None
) -> Choice | None:
    """The choice cached for this model and machine, or None (never measured here): reads, never measures."""
    if fingerprint is None:
        return None
    return _read(cache_path(fingerprint, machine_key(device)), list(configs or candidates(device)))


def _measured(
    measure: Measure, configs: list[tuple[str, str]], texts: Sequence[str] | None, machine: dict[str, Any]
) -> Choice:
    if len(configs) == 1:
        return Choice(*configs[0], machine=machine)
    logger.warning(
        "choosing the fastest accurate backend for this model on this machine (once; cached): %s",
        ", ".join(f"{b} {p}" for b, p in configs),
    )
    trials = measure_all(measure, configs, list(texts or calibration_texts()))
    best = pick(trials)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    logger.warning("chose %s %s (%s sentences/s)", best.backend, best.precision, best.sentences_per_s)
    return Choice(best.backend, best.precision, trials, machine, stamp)


def _read(path: Path, configs: list[tuple[str, str]]) -> Choice | None:
    """A cached choice, or None when missing, unreadable or made for another candidate list."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if [tuple(c) for c in data["configs"]] != [tuple(c) for c in configs]:
            return None
        trials = [Trial(**t) for t in data["trials"]]
        return Choice(data["backend"], data["precision"], trials, data["machine"], data["measured_at"], True)
    except (OSError, ValueError, KeyError, TypeError):
        return None
