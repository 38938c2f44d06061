"""What each model process adds to a server's memory: `munjang serve -m MODEL --model-processes N`
for N = 0 (the model in the server's process), 1, 2, 3, each started on warm caches (the automatic
choice measured and the graphs exported beforehand, as on every start but the first), one embedding
request answered, then the proportional set size (PSS: shared pages divided among the processes
that map them) of the server and every process under it.

    python bench/model_processes.py     # writes bench/results/model_processes.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx

from common import print_environment, running_server, write_result
from footprint import footprint

SETTLE_S = 3.0


def measure(model: str, processes: int) -> dict[str, Any]:
    args = ["-m", model, "--model-processes", str(processes)]
    with running_server(args) as (url, server):
        httpx.post(f"{url}/v1/embeddings", json={"input": "첫 요청"}, timeout=600).raise_for_status()
        time.sleep(SETTLE_S)
        found = footprint(server.pid)
    rows = ", ".join(f"{p['role']} {p['pss_mb']:.0f}" for p in found["processes"])
    print(f"--model-processes {processes}: PSS {found['total_pss_mb']:.0f} MB ({rows})")
    return {"model_processes": processes, **found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="multilingual-e5-small")
    parser.add_argument("--processes", default="0,1,2,3", help="comma-separated process counts")
    parser.add_argument("--name", default="model_processes", help="result name")
    args = parser.parse_args()
    env = print_environment()
    runs = [measure(args.model, int(n)) for n in args.processes.split(",")]
    totals = {int(str(r["model_processes"])): float(str(r["total_pss_mb"])) for r in runs}
    steps = {
        f"{n - 1}->{n}": round(totals[n] - totals[n - 1], 1) for n in totals if n - 1 in totals and n > 1
    }
    print(f"PSS added per extra model process: {steps}")
    write_result(args.name, {"model": args.model, "runs": runs, "added_per_process_mb": steps}, env)


if __name__ == "__main__":
    main()
