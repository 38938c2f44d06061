"""Helpers shared by the benchmarks: the machine's description, result files and the benchmark corpus.

Every benchmark prints `environment()` first and writes its figures with `write_result(name, payload)`
to `bench/results/<name>.json` (the environment is included). `load_corpus(n)` gives a reproducible
mixed Korean/English corpus built from the shared STS data (KorSTS and the STS Benchmark).
"""

from __future__ import annotations

import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "bench" / "results"

KORSTS_FILES = ("korsts/sts-train.tsv.gz", "korsts/sts-dev.tsv", "korsts/sts-test.tsv")
STSB_FILES = ("stsb/sts-train.csv", "stsb/sts-dev.csv", "stsb/sts-test.csv")

_PACKAGES = ("torch", "transformers", "tokenizers", "sentence-transformers", "numpy", "munjang")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _usable_cores() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return None


@lru_cache(maxsize=1)
def _static_environment() -> dict[str, Any]:
    import torch

    env: dict[str, Any] = {
        "cpu": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "usable_cores": _usable_cores(),
        "python": platform.python_version(),
        "os": platform.platform(),
        "machine": platform.machine(),
    }
    env.update({name: _version(name) for name in _PACKAGES})
    env["torch_mkldnn"] = torch.backends.mkldnn.is_available()
    env["cuda_available"] = torch.cuda.is_available()
    if env["cuda_available"]:
        env["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        env["cuda"] = torch.version.cuda
    return env


def environment() -> dict[str, Any]:
    """Where the figures were taken: CPU, cores, torch threads, library versions, OS and date (UTC)."""
    import torch

    env = dict(_static_environment())
    env["torch_threads"] = torch.get_num_threads()
    env["torch_interop_threads"] = torch.get_num_interop_threads()
    env["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return env


def print_environment(env: dict[str, Any] | None = None) -> dict[str, Any]:
    """Print the environment, one `key: value` per line, and return it."""
    env = environment() if env is None else env
    width = max(len(k) for k in env)
    print("environment")
    for key, value in env.items():
        print(f"  {key:<{width}}  {value}")
    print()
    return env


def write_result(name: str, payload: dict[str, Any], env: dict[str, Any] | None = None) -> Path:
    """Write `{"benchmark": name, "environment": ..., **payload}` to bench/results/<name>.json."""
    if not name or any(c in name for c in "/\\") or name.startswith("."):
        raise ValueError(f"result name must be a plain file name, not {name!r}")
    clash = {"benchmark", "environment"} & payload.keys()
    if clash:
        raise ValueError(f"payload keys {sorted(clash)} are reserved by write_result")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    record = {"benchmark": name, "environment": environment() if env is None else env, **payload}
    path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def interleaved_rates(runs: dict[str, Callable[[], Any]], items: int, repeats: int) -> dict[str, float]:
    """Items per second of each run (`items` per call), the median of `repeats` rounds in which every
    run takes its turn, so that drift in the machine's speed falls on all of them alike."""
    rounds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            rounds[name].append(items / (time.perf_counter() - started))
    return {name: round(statistics.median(values), 1) for name, values in rounds.items()}


def rss_bytes(pid: int | str = "self") -> int:
    """Resident memory of a process (this one by default; Linux /proc, 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants (Linux /proc; just `pid` elsewhere)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (Linux /proc, 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def shared_data_dir() -> Path:
    """The shared data folder: $MUNJANG_SHARED/data, or <repo>/../shared/data."""
    shared = os.environ.get("MUNJANG_SHARED")
    base = Path(shared) if shared else REPO.parent / "shared"
    return base / "data"


def _unique_sentences(files: tuple[str, ...], format: str) -> list[str]:
    """Unique sentences (sentence1 and sentence2) of the files, in file order."""
    from munjang.data import read_sts  # reads with csv.QUOTE_NONE: the files hold stray quotes

    data_dir = shared_data_dir()
    seen: dict[str, None] = {}
    for name in files:
        path = data_dir / name
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: the benchmark corpus needs the shared data")
        data = read_sts(path, format)
        for s1, s2 in zip(data.sentences1, data.sentences2, strict=True):
            seen.setdefault(s1, None)
            seen.setdefault(s2, None)
    return list(seen)


@lru_cache(maxsize=2)
def _pools() -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(_unique_sentences(KORSTS_FILES, "korsts")), tuple(_unique_sentences(STSB_FILES, "stsb"))


LANGUAGES = ("mixed", "ko", "en")


def load_corpus(n: int, seed: int = 0, lang: str = "mixed") -> list[str]:
    """`n` distinct sentences, shuffled with `seed`: Korean (KorSTS), English (STSb), or half of each.

    For "mixed" with an odd `n` the extra sentence is English. Raises ValueError when the data has fewer
    unique sentences of a language than needed.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {', '.join(LANGUAGES)}, not {lang!r}")
    korean, english = _pools()
    n_ko = {"mixed": n // 2, "ko": n, "en": 0}[lang]
    n_en = n - n_ko
    for language, pool, need in (("Korean (KorSTS)", korean, n_ko), ("English (STSb)", english, n_en)):
        if len(pool) < need:
            raise ValueError(
                f"the corpus needs {need} unique {language} sentences for n={n}, but the shared data "
                f"has only {len(pool)}"
            )
    rng = random.Random(seed)
    corpus = rng.sample(korean, n_ko) + rng.sample(english, n_en)
    rng.shuffle(corpus)
    return corpus


if __name__ == "__main__":  # python bench/common.py: show the environment and a corpus sample
    print_environment()
    sample = load_corpus(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
    print("\n".join(sample))


def training_arguments(args: Any, **settings: Any) -> Any:
    """`TrainingArguments` from the options the training benchmarks share.

    Reads `output_dir`, `epochs`, `batch_size`, `lr` and `seed` from the parsed command line, and
    `eval_steps` where the script has that option (checkpoints then follow evaluations); logs every 20
    steps. `settings` add to or override these (e.g. `prompt_name`, `save_checkpoints=False`).
    """
    from munjang.training import TrainingArguments

    eval_steps = getattr(args, "eval_steps", 0)
    base: dict[str, Any] = {
        "output_dir": args.output_dir,
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "learning_rate": args.lr,
        "eval_steps": eval_steps,
        "save_steps": eval_steps,
        "logging_steps": 20,
        "seed": args.seed,
    }
    return TrainingArguments(**{**base, **settings})


@contextmanager
def running_server(
    args: list[str], env: dict[str, str] | None = None, timeout: float = 600.0
) -> Iterator[Any]:
    """`munjang serve ARGS` on a free loopback port, its output in a log file; yields (url, process)
    once /health answers, and stops it afterwards."""
    import socket
    import subprocess
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "munjang.cli", "serve", "--port", str(port), "--no-access-log", *args]
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"munjang-serve-{port}.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the server did not come up; see {log_path}")
                time.sleep(0.2)
            yield url, server
        finally:
            server.terminate()
            server.wait(timeout=60)
