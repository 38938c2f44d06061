"""A remote encoder against a live `munjang serve` (a real OpenAI-compatible API) on STSb: the same
Spearman as the local model, vectors within float rounding, what the first run costs in requests and
tokens, and that the second run sends nothing (the disk cache).

The server runs all-MiniLM-L6-v2 in its own process on this machine; the local model is the same
embedded one. Three runs of the STS evaluator on the first --pairs pairs of STSb test: local, remote
with an empty cache, remote again. Then `munjang eval sts -m LOCAL -m REMOTE` prints both side by
side in one command (its output is kept in the JSON).

    python bench/remote.py                # 500 pairs
    python bench/remote.py --pairs 1379   # all of STSb test
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `common`, also under `python -m ...`

import munjang
from common import print_environment, running_server, shared_data_dir, write_result
from munjang.data import read_sts
from munjang.encoders.remote import RemoteEncoder
from munjang.evaluation import STSEvaluator

MODEL = "all-MiniLM-L6-v2"
KEY = "bench-key"


def timed_eval(evaluator: STSEvaluator, encoder: object) -> tuple[dict[str, float], float]:
    start = time.perf_counter()
    metrics = evaluator(encoder)
    return metrics, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=500)
    args = parser.parse_args()
    env = print_environment()
    lines = (shared_data_dir() / "stsb" / "sts-test.csv").read_text(encoding="utf-8").splitlines(True)
    local = munjang.load_encoder(MODEL, device="cpu")
    serve = ["--model", MODEL, "--api-key", KEY]
    with tempfile.TemporaryDirectory() as scratch, running_server(serve) as (url, _):
        data = Path(scratch) / "pairs.csv"
        data.write_text("".join(lines[: args.pairs]), encoding="utf-8")
        pairs = read_sts(data)
        evaluator = STSEvaluator.from_data(pairs)
        texts = list(dict.fromkeys([*pairs.sentences1, *pairs.sentences2]))
        os.environ["MUNJANG_REMOTE_API_KEY"] = KEY
        os.environ["MUNJANG_CACHE"] = str(Path(scratch) / "cache")
        name = f"remote:{url}/v1#{MODEL}"
        local_metrics, local_s = timed_eval(evaluator, local)
        runs = {}
        for run in ("cold", "cached"):
            with RemoteEncoder(name) as remote:
                metrics, seconds = timed_eval(evaluator, remote)
                usage = remote.usage.as_dict()
            runs[run] = {"seconds": seconds, "spearman_cosine": metrics["spearman_cosine"], **usage}
        with RemoteEncoder(name) as remote:
            gap = float(np.abs(remote.encode(texts) - local.encode(texts)).max())
        os.environ["MUNJANG_CACHE"] = str(Path(scratch) / "cache-cli")  # the table's remote row starts cold
        command = ["eval", "sts", "-d", str(data), "-m", MODEL, "-m", name]
        table = subprocess.run(
            [sys.executable, "-m", "munjang.cli", *command], capture_output=True, text=True, check=True
        ).stdout
    print(f"STSb test, first {len(pairs)} pairs ({len(texts)} distinct sentences)")
    print(f"  local   spearman_cosine {local_metrics['spearman_cosine'] * 100:.2f}  {local_s:.1f} s")
    for run, r in runs.items():
        print(
            f"  remote {run:<7} spearman_cosine {r['spearman_cosine'] * 100:.2f}  {r['seconds']:.1f} s  "
            f"{r['requests']} requests, {r['cache_hits']} cache hits, {r['input_tokens']:,} tokens"
        )
    print(f"  largest |remote - local| over the sentences: {gap:.2e}")
    print("\n$ munjang eval sts -d <first pairs> -m all-MiniLM-L6-v2 -m remote:<server>#all-MiniLM-L6-v2")
    print(table)
    path = write_result(
        "remote",
        {
            "data": f"STSb test, first {len(pairs)} pairs",
            "sentences": len(texts),
            "local": {"seconds": local_s, "spearman_cosine": local_metrics["spearman_cosine"]},
            "remote": runs,
            "max_abs_difference": gap,
            "eval_table": table,
        },
        env,
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
