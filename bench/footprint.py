"""What `munjang serve --demo` (what `make run` serves) holds in memory: the proportional set size
(PSS: shared pages divided among the processes that map them) of the server and of every process
under it, and what opening and searching more collections of the served model adds.

The server starts twice on one fresh `MUNJANG_CACHE` (a named model copied without its exported
graphs): the first start measures the backends, the second reads that choice, as every later start
does. After each start it answers an embedding request per model and a demo search, then its
processes' PSS is read; the second start then searches `--collections` more collections of the
default model (built beforehand in its `--collections-dir`) and is read again. Seconds to the first
answer of each start are reported too.

    python bench/footprint.py                  # writes bench/results/footprint.json
    python bench/footprint.py --name footprint_before
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx

from common import print_environment, process_tree, write_result
from munjang._util.paths import models_root

MODEL = "multilingual-e5-small"
QUERIES = ["economy", "주가가 급락했다.", "Will it rain in Seoul?"]
SETTLE_S = 3.0


def pss_bytes(pid: int) -> int:
    """A process's PSS (Linux /proc/PID/smaps_rollup; 0 when unreadable)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def describe(pid: int) -> str:
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(w.decode(errors="replace") for w in words if w)
    for marker in ("munjang.cli serve", "multiprocessing.spawn", "resource_tracker", "munjang.inference"):
        if marker in text:
            return marker
    return text[:80]


def footprint(root: int) -> dict[str, Any]:
    """PSS in MB of `root` and every process under it, and their total."""
    processes = [
        {"pid": pid, "role": describe(pid), "pss_mb": round(pss_bytes(pid) / 2**20, 1)}
        for pid in process_tree(root)
        if Path(f"/proc/{pid}/cmdline").exists() and pss_bytes(pid) > 0  # not exited, not a zombie
    ]
    return {"processes": processes, "total_pss_mb": round(sum(p["pss_mb"] for p in processes), 1)}


def build_collections(folder: Path, count: int, env: dict[str, str]) -> None:
    """`count` small collections of MODEL in `folder`, built in a process of their own."""
    code = (
        "import sys, munjang\n"
        "from pathlib import Path\n"
        "from munjang._util.bundled import demo_documents\n"
        "docs = demo_documents()[:20]\n"
        "encoder = munjang.load_encoder(sys.argv[1], backend='torch', precision='fp32')\n"
        f"for i in range({count}):\n"
        "    folder = Path(sys.argv[2]) / f'extra{i}'\n"
        "    with munjang.Collection.create(folder, sys.argv[1], encoder=encoder) as c:\n"
        "        c.add([d['id'] for d in docs], [d['text'] for d in docs])\n"
    )
    subprocess.run([sys.executable, "-c", code, MODEL, str(folder)], env=env, check=True)


def start(args: list[str], env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str, float]:
    """`munjang serve ARGS`; returns (process, URL, seconds until MODEL answered an embedding request)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "munjang.cli", "serve", "--port", str(port), "--no-access-log", *args]
    began = time.perf_counter()
    server = subprocess.Popen(command, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    while True:
        try:
            answer = httpx.post(f"{url}/v1/embeddings", json={"input": "첫 요청", "model": MODEL}, timeout=30)
            if answer.status_code == 200:
                return server, url, time.perf_counter() - began
        except httpx.HTTPError:
            pass
        if server.poll() is not None or time.perf_counter() - began > 900:
            raise RuntimeError(f"the server did not answer; see {log}")
        time.sleep(0.2)


def exercise(url: str, models: list[str], collections: list[str]) -> None:
    for model in models:
        httpx.post(
            f"{url}/v1/embeddings", json={"input": QUERIES, "model": model}, timeout=60
        ).raise_for_status()
    for name in collections:
        for query in QUERIES:
            httpx.post(
                f"{url}/v1/collections/{name}/search", json={"query": query}, timeout=120
            ).raise_for_status()


def settled(url: str, began: float) -> float:
    """Seconds from the start until no model's backend is still measured in the background."""
    while any(
        (card.get("backend") or "").startswith("measuring")
        for card in httpx.get(f"{url}/v1/models", timeout=10).json()["data"]
    ):
        time.sleep(1.0)
    return time.perf_counter() - began


def run_start(
    label: str, args: list[str], env: dict[str, str], tmp: Path, extra: list[str]
) -> dict[str, Any]:
    began = time.perf_counter()
    server, url, answered = start(args, env, tmp / f"{label}.log")
    try:
        models = [card["id"] for card in httpx.get(f"{url}/v1/models", timeout=10).json()["data"]]
        exercise(url, models, ["demo"])
        switched = settled(url, began)
        exercise(url, models, ["demo"])
        time.sleep(SETTLE_S)
        result: dict[str, Any] = {
            "first_answer_s": round(answered, 1),
            "backends_settled_s": round(switched, 1),
            "served": footprint(server.pid),
        }
        if extra:
            exercise(url, [], extra)
            time.sleep(SETTLE_S)
            result["after_extra_collections"] = footprint(server.pid)
            result["extra_collections_mb"] = round(
                result["after_extra_collections"]["total_pss_mb"] - result["served"]["total_pss_mb"], 1
            )
        result["models"] = httpx.get(f"{url}/v1/models", timeout=10).json()["data"]
    finally:
        server.terminate()
        server.wait(timeout=60)
    print(
        f"{label}: first answer {result['first_answer_s']} s, settled {result['backends_settled_s']} s, "
        f"PSS {result['served']['total_pss_mb']} MB",
        end="",
    )
    print(f", +{result['extra_collections_mb']} MB for {len(extra)} collections" if extra else "")
    for process in result["served"]["processes"]:
        print(f"  {process['pid']:>7} {process['role']:<28} {process['pss_mb']:>8.1f} MB")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--collections", type=int, default=4, help="extra collections of the model to search")
    parser.add_argument("--name", default="footprint", help="result name (bench/results/NAME.json)")
    parser.add_argument(
        "--serve-args", default="", help="more `munjang serve` arguments, e.g. '--model-processes 2'"
    )
    parser.add_argument(
        "--measure-nice",
        type=int,
        default=10,
        help="niceness of the background measurement (0 on a machine busy with other jobs: 10 starves)",
    )
    args = parser.parse_args()
    env_record = print_environment()
    source = models_root() / MODEL
    if not source.is_dir():
        raise SystemExit(f"run `munjang models pull {MODEL}` first")
    with tempfile.TemporaryDirectory(prefix="munjang-footprint-") as tmp_name:
        tmp = Path(tmp_name)
        shutil.copytree(source, tmp / "models" / MODEL, ignore=shutil.ignore_patterns("onnx", "openvino"))
        env = {
            **os.environ,
            "MUNJANG_CACHE": str(tmp / "cache"),
            "MUNJANG_MODELS": str(tmp / "models"),
            "TMPDIR": str(tmp),
        }
        env.pop("MUNJANG_ENCODE_BACKEND", None)
        env["MUNJANG_MEASURE_NICE"] = str(args.measure_nice)
        collections = tmp / "collections"
        collections.mkdir()
        build_collections(collections, args.collections, env)
        extra_args = args.serve_args.split()
        serve = ["--demo", "--collections-dir", str(collections), *extra_args]
        first = run_start("first start", serve, env, tmp, [])
        later = run_start("second start", serve, env, tmp, [f"extra{i}" for i in range(args.collections)])
    write_result(
        args.name,
        {
            "command": " ".join(["munjang serve --demo", *extra_args]),
            "measure_nice": args.measure_nice,
            "first_start": first,
            "second_start": later,
        },
        env_record,
    )


if __name__ == "__main__":
    main()
