"""Snapshots at scale: export and import of a collection of N passages, against re-encoding them.

A folder collection of N Korean passages (three KorSTS sentences each, one passage per document) is
built with collection_scale.py's cheap encoder (a random 64-d static model on multilingual-e5-small's
tokenizer) and the word tokenizer; then, each in a fresh process (so its peak RSS is its own):

- export: `Collection.export` to a snapshot file (passages/s, peak RSS, file size);
- import: `Collection.import_` of that file into a new folder collection, indexes built
  (passages/s, peak RSS; no encoder is loaded);
- re-encoding: multilingual-e5-small encoding a sample of the passages (passages/s), and the time
  it would take for all N: what a restore saves a user who would otherwise rebuild from the texts.

    python bench/snapshots.py --passages 100000
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collection_scale import cheap_encoder, passages
from common import load_corpus, print_environment, write_result


def _phase(kind: str, a: str, b: str) -> None:
    """One step in this (fresh) process; prints its seconds and peak RSS as JSON."""
    from munjang.search import Collection

    started = time.perf_counter()
    if kind == "export":
        with Collection.open(a, readonly=True) as col:
            col.export(b, show_progress_bar=False)
    else:
        Collection.import_(a, b, show_progress_bar=False).close()
    seconds = time.perf_counter() - started
    # VmHWM: this process image's peak (ru_maxrss would carry the parent's peak across fork + exec).
    status = Path("/proc/self/status").read_text().splitlines()
    peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
    print(json.dumps({"seconds": seconds, "peak_rss_bytes": peak, "torch_loaded": "torch" in sys.modules}))


def _run(kind: str, a: Path, b: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--phase", kind, str(a), str(b)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=20_000)
    parser.add_argument("--e5-sample", type=int, default=1000)
    parser.add_argument("--name", default="snapshots")
    parser.add_argument("--phase", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        _phase(*args.phase)
        return
    environment = print_environment()
    from munjang.search import Collection

    pool = load_corpus(5000, seed=0, lang="ko")
    work = Path(tempfile.mkdtemp(prefix="munjang-snapshots-"))
    try:
        model = cheap_encoder(work / "static64")
        source = work / "source"
        with Collection.create(source, str(model), tokenizer="word") as col:
            for start in range(0, args.passages, args.batch):
                n = min(args.batch, args.passages - start)
                col.add(
                    [f"d{start + i}" for i in range(n)], passages(n, start, pool), show_progress_bar=False
                )
        snapshot = work / "source.snapshot"
        export = _run("export", source, snapshot)
        restore = _run("import", snapshot, work / "restored")
        with Collection.open(work / "restored", readonly=True) as col:
            assert len(col) == args.passages

        import munjang
        from munjang.models import pull

        e5 = munjang.load_encoder(str(pull("multilingual-e5-small").folder), device="cpu")
        sample = passages(args.e5_sample, 0, pool)
        e5.encode(sample[:32])
        started = time.perf_counter()
        e5.encode(sample, batch_size=32)
        e5_rate = args.e5_sample / (time.perf_counter() - started)
        result = {
            "passages": args.passages,
            "tokenizer": "word",
            "encoder": "collection_scale.py's cheap encoder (64-d static)",
            "snapshot_bytes": snapshot.stat().st_size,
            "export": {**export, "passages_per_s": round(args.passages / export["seconds"], 1)},
            "import": {**restore, "passages_per_s": round(args.passages / restore["seconds"], 1)},
            "e5_small_reencode": {
                "sample": args.e5_sample,
                "passages_per_s": round(e5_rate, 1),
                "projected_seconds": round(args.passages / e5_rate, 1),
            },
            "import_saves_seconds": round(args.passages / e5_rate - restore["seconds"], 1),
        }
        print(json.dumps(result, indent=2))
        print("wrote", write_result(args.name, result, environment))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
