"""A model's first use on a machine: what `load_encoder(name)` and its first `encode` cost before any
exported graph or automatic choice is cached (the automatic backend measures every candidate once),
and the same in a second process that reads the cache; with --serve, the same for what `make run`
starts (`munjang serve --demo`): seconds until it answers its first embedding request, each model,
and a demo search (the demo collection is built once the server runs), with the server's peak RSS
then; and the phases of that start timed in a process that takes the same steps as `munjang serve`
(imports, loading each model, warming, creating the app).

Each model runs in fresh processes with an empty `MUNJANG_CACHE`; a named model is copied into a
temporary models folder without its exported graphs (`onnx/`), so nothing built earlier is reused.

    python bench/first_use.py           # writes bench/results/first_use.json
    python bench/first_use.py --serve   # writes bench/results/first_use_serve.json

Run it on a quiet machine: every figure here is CPU-bound on the cores it shares.

`--models` takes "default" (the embedded all-MiniLM-L6-v2) and installed model names
(`munjang models pull multilingual-e5-small` first).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import environment, print_environment, running_server, write_result
from munjang._util.paths import models_root

CHILD = """
import json, sys, time
start = time.perf_counter()
import munjang
name = sys.argv[1]
model = munjang.load_encoder(None if name == "default" else name)
loaded = time.perf_counter()
model.encode(["첫 문장을 인코딩한다.", "The first sentence."])
done = time.perf_counter()
choice = model.auto_choice()
print(json.dumps({
    "load_s": round(loaded - start, 2),
    "first_encode_s": round(done - loaded, 2),
    "total_s": round(done - start, 2),
    "chose": f"{choice.backend} {choice.precision}",
    "cached": choice.cached,
    "trials": [
        {"config": f"{t.backend} {t.precision}", "mean_cosine": t.mean_cosine, "min_cosine": t.min_cosine,
         "sentences_per_s": t.sentences_per_s, "error": t.error}
        for t in choice.trials
    ],
}))
"""


def run_child(name: str, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, name], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"error: {name} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def fresh_environment(tmp: Path, name: str) -> dict[str, str]:
    """This process's environment with an empty cache in `tmp` and, for a named model, a copy of the
    installed model there without its exported graphs."""
    env = {**os.environ, "MUNJANG_CACHE": str(tmp / "cache")}
    env.pop("MUNJANG_ENCODE_BACKEND", None)
    if name != "default":
        source = models_root() / name
        if not source.is_dir():
            raise SystemExit(f"error: {name} is not installed; run `munjang models pull {name}` first")
        shutil.copytree(source, tmp / "models" / name, ignore=shutil.ignore_patterns("onnx", "openvino"))
        env["MUNJANG_MODELS"] = str(tmp / "models")
    return env


def measure(name: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="munjang-first-use-") as tmp:
        env = fresh_environment(Path(tmp), name)
        first = run_child(name, env)
        again = run_child(name, env)
    print(
        f"{name}: first use {first['total_s']:.1f} s (load {first['load_s']:.1f} s, first encode "
        f"{first['first_encode_s']:.1f} s, chose {first['chose']}); cached {again['total_s']:.1f} s"
    )
    for trial in first["trials"]:
        print(f"  {trial}")
    return {"first": first, "cached": again}


PHASES = """
import json, sys, time
start = time.perf_counter()
phases = {}
def mark(name, since=[start]):
    now = time.perf_counter()
    phases[name] = round(now - since[0], 2)
    since[0] = now
import munjang.cli.serve, uvicorn, fastapi
from munjang.encoders.dense.encoder import load_encoder
from munjang.models import DEFAULT_SERVE_MODELS
mark("imports")
served = munjang.cli.serve._named_models(None, DEFAULT_SERVE_MODELS)
encoders = {}
for name, path in served:
    encoders[name] = load_encoder(path)
    mark(f"load {name}")
from munjang.server.backend_choice import BackgroundChoice
provisional = BackgroundChoice.provisional(encoders)
BackgroundChoice(provisional)  # serves those on torch fp32 (not started: nothing measured here)
mark("check for a cached backend choice")
for name, encoder in encoders.items():
    encoder.encode("warm up") if name in provisional else encoder.warmup()
    mark(f"warm {name}")
from munjang.server import ServerSettings, create_app
app = create_app(ServerSettings(models=encoders, model_processes=0))
mark("create the app")
print(json.dumps({"phases": phases, "total_s": round(time.perf_counter() - start, 2)}))
"""


def server_rss_mb(pid: int) -> dict[str, float]:
    """The server process's RSS now and at its peak (VmHWM), in MB."""
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {
        key: round(int(status[field].split()[0]) / 1024, 1)
        for key, field in (("rss_mb", "VmRSS"), ("peak_rss_mb", "VmHWM"))
    }


def serve_first_start(name: str) -> dict[str, Any]:
    """Seconds from starting `munjang serve --demo` with empty caches (`name`: its named model) until
    it answers its first embedding request (the default model), then each model, then a demo search;
    the server measures its models' backends in the background meanwhile."""
    import httpx

    with tempfile.TemporaryDirectory(prefix="munjang-first-serve-") as tmp:
        env = fresh_environment(Path(tmp), name)
        start = time.perf_counter()
        with running_server(["--demo"], env=env) as (url, server):
            healthy = time.perf_counter() - start
            httpx.post(f"{url}/v1/embeddings", json={"input": "첫 요청"}, timeout=600).raise_for_status()
            first = time.perf_counter() - start
            memory = server_rss_mb(server.pid)
            models = [m["id"] for m in httpx.get(f"{url}/v1/models", timeout=60).json()["data"]]
            for model in models:
                body = {"input": "첫 요청", "model": model}
                httpx.post(f"{url}/v1/embeddings", json=body, timeout=600).raise_for_status()
            answered = time.perf_counter() - start
            search = {"query": "주식 폭락", "top_k": 1}
            httpx.post(f"{url}/v1/collections/demo/search", json=search, timeout=600).raise_for_status()
            demo = time.perf_counter() - start
        listed = ", ".join(models)
        print(
            f"munjang serve --demo ({listed}): healthy at {healthy:.1f} s, first answer at {first:.1f} s "
            f"(server RSS {memory['rss_mb']} MB, peak {memory['peak_rss_mb']} MB), all answered at "
            f"{answered:.1f} s, demo searched at {demo:.1f} s",
            flush=True,
        )
        phases = run_phases(fresh_environment(Path(tmp) / "phases", name))
    print(f"  phases of the same start, in one process: {phases}")
    return {
        "models": models,
        "healthy_s": round(healthy, 2),
        "first_answer_s": round(first, 2),
        "server_at_first_answer": memory,
        "every_model_answered_s": round(answered, 2),
        "demo_searched_s": round(demo, 2),
        "phases": phases,
    }


def run_phases(env: dict[str, str]) -> dict[str, Any]:
    """The start's steps timed in one process, on empty caches of their own."""
    done = subprocess.run(
        [sys.executable, "-c", PHASES], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"error: the phases run failed:\n{done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="default,multilingual-e5-small")
    parser.add_argument("--serve", action="store_true", help="time `munjang serve --demo` instead")
    parser.add_argument("--name", default=None, help="result name (default first_use, or first_use_serve)")
    args = parser.parse_args(argv)
    env = print_environment(environment())
    if args.serve:
        served = serve_first_start("multilingual-e5-small")  # the demo's named model; MiniLM is embedded
        write_result(args.name or "first_use_serve", {"serve": served}, env)
        return
    results = {name: measure(name) for name in args.models.split(",")}
    write_result(args.name or "first_use", {"models": results}, env)


if __name__ == "__main__":
    main()
