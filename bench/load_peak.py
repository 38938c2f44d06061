"""Peak memory of a fresh process that loads a model and encodes one sentence: munjang's
`load_encoder` (the automatic choice, and torch fp32) against sentence-transformers loading the same
folder, each in a process of its own, in one run. The peak is the kernel's VmHWM (/proc/self/status:
resident anonymous and file pages at their highest), read after the encode; the steady figure is
VmRSS then.

Warm rows are what every later CLI call and server start pays: the automatic choice is measured first
(and cached) in a process of its own. `--cold` adds that first process as a row of its own, on a copy
of the model folder and an empty `$MUNJANG_CACHE` (nothing exported, nothing measured): its peak and
time include measuring every candidate backend and exporting the graphs.

    python bench/load_peak.py           # writes bench/results/load_peak.json
    python bench/load_peak.py --cold    # also the first run on empty caches
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_environment, write_result
from munjang._util.paths import models_root

CHILD = """
import json, sys, time
start = time.perf_counter()
which, folder = sys.argv[1], sys.argv[2]
if which == "sentence-transformers":
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(folder, device="cpu")
else:
    import munjang
    options = {"backend": "torch", "precision": "fp32"} if which == "munjang torch fp32" else {}
    model = munjang.load_encoder(folder, **options)
model.encode(["첫 문장을 인코딩한다."])
seconds = time.perf_counter() - start
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
mb = lambda key: round(int(status[key].split()[0]) / 1024, 1)
chosen = "torch fp32"
if which != "sentence-transformers":
    chosen = model.info()["backend"] + " " + model.info()["precision"]
print(json.dumps({"peak_rss_mb": mb("VmHWM"), "rss_after_mb": mb("VmRSS"), "seconds": round(seconds, 1),
                  "runs_on": chosen}))
"""

WARM = ("sentence-transformers", "munjang auto", "munjang torch fp32")


def run(which: str, folder: Path, env: dict[str, str] | None = None) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, which, str(folder)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def cold_row(folder: Path) -> dict[str, object]:
    """The first `munjang auto` process on a copy of the folder without its exports, empty caches."""
    with tempfile.TemporaryDirectory(prefix="load-peak-") as tmp:
        copy = Path(tmp) / folder.name
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("onnx", ".*.lock"))
        env = {**os.environ, "MUNJANG_CACHE": str(Path(tmp) / "cache")}
        return run("munjang auto", copy, env)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="multilingual-e5-small", help="an installed model name")
    parser.add_argument("--name", default="load_peak", help="result name")
    parser.add_argument("--repeats", type=int, default=1, help="processes per row (median kept)")
    parser.add_argument("--cold", action="store_true", help="also the first run on empty caches")
    args = parser.parse_args()
    env = print_environment()
    folder = models_root() / args.model
    rows: dict[str, dict[str, object]] = {}
    if args.cold:
        rows["munjang auto, first run (empty caches)"] = cold_row(folder)
    run("munjang auto", folder)  # measures and caches the automatic choice, if not yet
    runs: dict[str, list[dict[str, object]]] = {which: [] for which in WARM}
    for _ in range(args.repeats):  # interleaved, so a busy moment hits every row alike
        for which in WARM:
            runs[which].append(run(which, folder))
    for which, found in runs.items():
        middle = sorted(found, key=lambda r: float(str(r["peak_rss_mb"])))[len(found) // 2]
        peaks = [float(str(r["peak_rss_mb"])) for r in found]
        rows[which] = {**middle, "peak_rss_mb_runs": peaks, "peak_rss_mb_median": statistics.median(peaks)}
    for which, row in rows.items():
        print(
            f"{which:<40} peak {row['peak_rss_mb']:>8} MB  after {row['rss_after_mb']:>8} MB  "
            f"{row['seconds']:>5} s  ({row['runs_on']})"
        )
    write_result(args.name, {"model": args.model, "repeats": args.repeats, "rows": rows}, env)


if __name__ == "__main__":
    main()
