"""Peak memory of a fresh process that loads a model and encodes one sentence: munjang's
`load_encoder` (the automatic choice, and torch fp32) against sentence-transformers loading the same
folder, each in its own process, in one run. The automatic choice is measured first (and cached) in
a process of its own, so the rows compare a later process: what every CLI call and server pays.

    python bench/load_peak.py      # writes bench/results/load_peak.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result
from munjang.paths import models_root

CHILD = """
import json, resource, sys, time
start = time.perf_counter()
which, folder = sys.argv[1], sys.argv[2]
if which == "sentence-transformers":
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(folder, device="cpu")
else:
    import munjang
    options = {} if which == "munjang auto" else {"backend": "torch", "precision": "fp32"}
    model = munjang.load_encoder(folder, **options)
model.encode(["첫 문장을 인코딩한다."])
seconds = time.perf_counter() - start
chosen = "torch fp32"
if which != "sentence-transformers":
    chosen = model.info()["backend"] + " " + model.info()["precision"]
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"peak_rss_mb": round(peak, 1), "seconds": round(seconds, 1), "runs_on": chosen}))
"""


def run(which: str, folder: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, which, str(folder)], capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="multilingual-e5-small", help="an installed model name")
    parser.add_argument("--name", default="load_peak", help="result name")
    args = parser.parse_args()
    env = print_environment()
    folder = models_root() / args.model
    run("munjang auto", folder)  # measures and caches the automatic choice, if not yet
    rows = {
        which: run(which, folder) for which in ("sentence-transformers", "munjang auto", "munjang torch fp32")
    }
    for which, row in rows.items():
        print(f"{which:<24} peak RSS {row['peak_rss_mb']:>8} MB  {row['seconds']:>5} s  ({row['runs_on']})")
    write_result(args.name, {"model": args.model, "rows": rows}, env)


if __name__ == "__main__":
    main()
