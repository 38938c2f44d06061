"""A model's first use on a machine: what `load_encoder(name)` and its first `encode` cost before any
exported graph or automatic choice is cached (the automatic backend measures every candidate once),
and the same in a second process that reads the cache; with --serve, the same for what `make run`
starts (`munjang serve --demo`): seconds until it answers an embedding request for each model.

Each model runs in fresh processes with an empty `MUNJANG_CACHE`; a named model is copied into a
temporary models folder without its exported graphs (`onnx/`), so nothing built earlier is reused.

    python bench/first_use.py           # writes bench/results/first_use.json
    python bench/first_use.py --serve   # writes bench/results/first_use_serve.json

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
from munjang.paths import models_root

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


def serve_first_start(name: str) -> dict[str, Any]:
    """Seconds from starting `munjang serve --demo` with empty caches (`name`: its named model) until
    each of its models has answered an embedding request (the server measures its models' backends
    before it is healthy)."""
    import httpx

    with tempfile.TemporaryDirectory(prefix="munjang-first-serve-") as tmp:
        env = fresh_environment(Path(tmp), name)
        start = time.perf_counter()
        with running_server(["--demo"], env=env) as (url, _):
            healthy = time.perf_counter() - start
            models = [m["id"] for m in httpx.get(f"{url}/v1/models", timeout=60).json()["data"]]
            for model in models:
                body = {"input": "첫 요청", "model": model}
                httpx.post(f"{url}/v1/embeddings", json=body, timeout=600).raise_for_status()
            answered = time.perf_counter() - start
    listed = ", ".join(models)
    print(f"munjang serve --demo ({listed}): healthy at {healthy:.1f} s, all answered at {answered:.1f} s")
    return {"models": models, "healthy_s": round(healthy, 2), "every_model_answered_s": round(answered, 2)}


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
