"""The automatic backend: the fastest (backend, precision) that keeps fp32 accuracy, measured once per
model and machine, for encoders and cross-encoders alike.

One machinery (`measure_all`, `pick`, `choose`, the cache) is parameterised by a `Metric`: the
candidates, the calibration inputs, how a candidate's outputs are judged against torch fp32's and the
bar they must keep. `COSINE`, below, is the encoders' (vectors); the cross-encoders' score agreement
is `encoders/cross/score_autotune.py`'s `SCORES`. What follows describes the encoders'.

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
from typing import Any, Protocol, TypeVar

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

# Measures one configuration: (backend, precision, inputs) -> (outputs, seconds). The outputs are what
# the metric compares: L2-normalized vectors for the cosine, raw scores for the score agreement.
Measure = Callable[[str, str, Sequence[Any]], tuple[np.ndarray, float]]


class Judged(Protocol):
    """What every kind of trial has: its configuration, why it failed, whether it kept the bar, its speed."""

    backend: str
    precision: str
    error: str | None

    @property
    def accurate(self) -> bool: ...

    @property
    def per_s(self) -> float | None: ...


@dataclass(frozen=True)
class Metric:
    """What one kind of output is judged by against the fp32 reference, and everything else that is
    particular to it: the candidates, the calibration inputs, the trial it records, the cache's key.

    `agreement(outputs, reference)` gives the trial's accuracy fields (the reference's own are `exact`);
    the trial's `accurate` compares them with `bar`; `rate` names the trial's throughput field (rounded
    to `digits`). `fingerprint_prefix` and `machine_extra` keep one metric's cached choices apart from
    another's in the shared cache folder."""

    trial: type[Any]
    agreement: Callable[[np.ndarray, np.ndarray], dict[str, float]]
    exact: dict[str, float]
    bar: dict[str, float]
    rate: str
    digits: int
    candidates: Callable[[torch.device], list[tuple[str, str]]]
    inputs: Callable[[], list[Any]]
    subject: str  # what the log lines say is measured: "model", "cross-encoder"
    unit: str  # what the throughput counts: "sentences", "pairs"
    tag: str = "autotune"  # the log lines' prefix
    fingerprint_prefix: str = ""
    machine_extra: dict[str, Any] = field(default_factory=dict)
    not_measured: str | None = None


@dataclass
class Trial:
    """One candidate's measurement under the cosine metric (error: why it could not run here)."""

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

    @property
    def per_s(self) -> float | None:
        return self.sentences_per_s


def runtime_available(backend: str) -> bool:
    """Whether the runtime a backend needs is installed (torch always is)."""
    module = {"onnx": "onnxruntime", "openvino": "openvino"}.get(backend)
    return module is None or find_spec(module) is not None


def candidates(device: torch.device) -> list[tuple[str, str]]:
    """The configurations worth measuring for an encoder on `device`, reference (torch fp32) first.

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


def cosine_agreement(vectors: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """Mean and least cosine of normalized vectors to the reference's, row by row."""
    cosine = np.sum(vectors * reference, axis=1)
    return {"mean_cosine": round(float(cosine.mean()), 7), "min_cosine": round(float(cosine.min()), 7)}


# The encoders' metric: vectors by cosine (the names resolved when called, so they can be patched).
COSINE = Metric(
    trial=Trial,
    agreement=cosine_agreement,
    exact={"mean_cosine": 1.0, "min_cosine": 1.0},
    bar={"mean_cosine": MEAN_COSINE, "min_cosine": MIN_COSINE},
    rate="sentences_per_s",
    digits=1,
    candidates=lambda device: candidates(device),
    inputs=lambda: calibration_texts(),
    subject="model",
    unit="sentences",
    not_measured=NOT_MEASURED,
)


@dataclass
class Choice:
    """The configuration backend "auto" runs on, and the measurements behind it."""

    backend: str
    precision: str
    trials: list[Any] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=dict)
    measured_at: str = ""
    cached: bool = False
    metric: Metric = field(default=COSINE, repr=False, compare=False)

    def describe(self) -> dict[str, Any]:
        described = {
            "backend": self.backend,
            "precision": self.precision,
            "chosen_by": "auto (read from the cache)" if self.cached else "auto (measured)",
            "measured_at": self.measured_at,
            "bar": dict(self.metric.bar),
            "trials": [asdict(t) for t in self.trials],
        }
        if self.metric.not_measured is not None:
            described["not_measured"] = self.metric.not_measured
        return described

    def payload(self, configs: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """What the cache file holds (the format older versions wrote and read)."""
        return {
            "configs": [list(c) for c in configs],
            "backend": self.backend,
            "precision": self.precision,
            "trials": [asdict(t) for t in self.trials],
            "machine": self.machine,
            "measured_at": self.measured_at,
            "cached": False,
        }


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


def measure_all(
    measure: Measure, configs: Sequence[tuple[str, str]], inputs: Sequence[Any], metric: Metric = COSINE
) -> list[Any]:
    """Accuracy of every configuration against the first (the reference), then the throughput of the
    accurate ones: a first round for all, then `ROUNDS - 1` more for those within `CONTENDER` of the
    fastest (a candidate far behind is not measured again)."""
    started = time.perf_counter()
    reference, one_pass = measure(*configs[0], inputs)
    trials: list[Any] = [metric.trial(*configs[0], **metric.exact)]
    for done, (backend, precision) in enumerate(configs[1:], start=1):
        _progress(done, len(configs), time.perf_counter() - started, one_pass)
        trial = metric.trial(backend, precision)
        try:
            outputs, _ = measure(backend, precision, inputs)  # also builds and warms the backend
        except Exception as e:  # a runtime that cannot export or run this model is skipped, not fatal
            trial.error = f"{type(e).__name__}: {e}"[:300]
            logger.info("%s: %s %s cannot run here: %s", metric.tag, backend, precision, trial.error)
        else:
            for name, value in metric.agreement(outputs, reference).items():
                setattr(trial, name, value)
        trials.append(trial)
    best: dict[int, float] = {}
    for round_ in range(ROUNDS):
        fastest = min(best.values(), default=0.0)
        for i, trial in enumerate(trials):
            if not trial.accurate or (round_ and best[i] > fastest / CONTENDER):
                continue
            _, seconds = measure(trial.backend, trial.precision, inputs)
            best[i] = min(best.get(i, float("inf")), seconds)
    for i, seconds in best.items():
        setattr(trials[i], metric.rate, round(len(inputs) / max(seconds, 1e-9), metric.digits))
    return trials


def _progress(done: int, total: int, elapsed: float, one_pass: float) -> None:
    """One log line per candidate: how far the measurement is and about how long it has left (the
    candidates still to build at the pace so far, then the timed rounds at about one pass each)."""
    left = elapsed / done * (total - done) + ROUNDS * total * one_pass
    logger.warning(
        "autotune: candidate %d of %d, %.0f s so far, about %.0f s left", done + 1, total, elapsed, left
    )


JudgedT = TypeVar("JudgedT", bound=Judged)


def pick(trials: Sequence[JudgedT]) -> JudgedT:
    """The accurate trial with the highest throughput (the reference, first, wins ties)."""
    accurate = [t for t in trials if t.accurate and t.per_s is not None]
    if not accurate:
        return trials[0]
    return max(accurate, key=lambda t: t.per_s or 0.0)


def choose(
    measure: Measure,
    fingerprint: str | None,
    device: torch.device,
    configs: Sequence[tuple[str, str]] | None = None,
    inputs: Sequence[Any] | None = None,
    metric: Metric = COSINE,
) -> Choice:
    """The cached choice for this model (`fingerprint`; None: never cached) and machine, or a new
    measurement, cached. Processes that start together measure once: the others wait on a file lock."""
    configs = list(configs or metric.candidates(device))
    machine = _machine(device, metric)
    if fingerprint is None or len(configs) == 1:
        return _measured(measure, configs, inputs, machine, metric)
    path = cache_path(metric.fingerprint_prefix + fingerprint, machine)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=1800):
        found = _read(path, configs, metric)
        if found is not None:
            return found
        choice = _measured(measure, configs, inputs, machine, metric)
        text = json.dumps(choice.payload(configs), indent=2)
        atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        return choice


def cached_choice(
    fingerprint: str | None,
    device: torch.device,
    configs: Sequence[tuple[str, str]] | None = None,
    metric: Metric = COSINE,
) -> Choice | None:
    """The choice cached for this model and machine, or None (never measured here): reads, never measures."""
    if fingerprint is None:
        return None
    path = cache_path(metric.fingerprint_prefix + fingerprint, _machine(device, metric))
    return _read(path, list(configs or metric.candidates(device)), metric)


def _machine(device: torch.device, metric: Metric) -> dict[str, Any]:
    return {**machine_key(device), **metric.machine_extra}


def _measured(
    measure: Measure,
    configs: list[tuple[str, str]],
    inputs: Sequence[Any] | None,
    machine: dict[str, Any],
    metric: Metric,
) -> Choice:
    if len(configs) == 1:
        return Choice(*configs[0], machine=machine, metric=metric)
    logger.warning(
        "choosing the fastest accurate backend for this %s on this machine (once; cached): %s",
        metric.subject,
        ", ".join(f"{b} {p}" for b, p in configs),
    )
    trials = measure_all(measure, configs, list(inputs or metric.inputs()), metric)
    best = pick(trials)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    logger.warning("chose %s %s (%s %s/s)", best.backend, best.precision, best.per_s, metric.unit)
    return Choice(best.backend, best.precision, trials, machine, stamp, metric=metric)


def _read(path: Path, configs: list[tuple[str, str]], metric: Metric) -> Choice | None:
    """A cached choice, or None when missing, unreadable or made for another candidate list."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if [tuple(c) for c in data["configs"]] != [tuple(c) for c in configs]:
            return None
        trials = [metric.trial(**t) for t in data["trials"]]
        machine = data.get("machine", {})  # cross-encoder files written by older versions have none
        return Choice(data["backend"], data["precision"], trials, machine, data["measured_at"], True, metric)
    except (OSError, ValueError, KeyError, TypeError):
        return None
