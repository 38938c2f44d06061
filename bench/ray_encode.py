"""Distributed encoding on Ray against one process, on the same corpus, in one run.

The corpus: the unique sentences of KorSTS, STSb and KorNLI (read without CSV quoting: the files hold
stray quotes) cycled with distinct ids up to `--sentences`, written as four files (jsonl, jsonl.gz,
csv, parquet). The model: the embedded all-MiniLM-L6-v2, fp32 torch.

  (a) one process, all threads: what `munjang encode` runs (load_encoder + encode), timed on encode;
  (b) `encode_with_ray` on a local Ray with `--workers` actors of `--threads-per-worker` threads,
      timed over the whole call (reading, model probe, actor start-up, encoding, parquet writes;
      the Ray start-up itself is reported apart);
  then the largest absolute difference between the two, and a resume check: `munjang encode --ray`
  in a subprocess, SIGKILLed once `--kill-at` of its shards are written, then rerun in-process; the
  rerun must encode exactly the shards that were missing, and give the same vectors. The mean 1-minute
  load average of each phase is recorded: each phase keeps about 2 cores busy itself, so a mean well
  above the core count means other work on a shared machine skewed that phase's figures.

    python bench/ray_encode.py                    # 200,000 sentences (about half an hour on 2 cores)
    python bench/ray_encode.py --sentences 5000 --shard-size 500  # a quick check
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    KORSTS_FILES,
    REPO,
    STSB_FILES,
    environment,
    print_environment,
    process_tree,
    shared_data_dir,
)

KORNLI_FILES = ("kornli/xnli.dev.ko.tsv", "kornli/xnli.test.ko.tsv.gz")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sentences", type=int, default=200_000, help="corpus size (default 200000)")
    p.add_argument("--workers", type=int, default=2, help="Ray actors (default 2)")
    p.add_argument("--threads-per-worker", type=int, default=1, help="threads per actor (default 1)")
    p.add_argument("--shard-size", type=int, default=5000, help="rows per shard (default 5000)")
    p.add_argument("--kill-at", type=float, default=0.25, help="fraction of shards written before the kill")
    p.add_argument("--work", type=Path, default=REPO / "runs" / "ray_encode", help="corpus and outputs")
    p.add_argument("--out", type=Path, default=REPO / "runs" / "ray_encode.json", help="result JSON")
    args = p.parse_args(argv)
    for key in ("sentences", "workers", "threads_per_worker", "shard_size"):
        if getattr(args, key) < 1:
            p.error(f"--{key.replace('_', '-')} must be at least 1")
    if not 0 < args.kill_at < 1:
        p.error("--kill-at must be between 0 and 1")
    return args


def unique_sentences() -> list[str]:
    """Every distinct sentence of KorSTS, STSb and KorNLI, in file order."""
    from munjang.data import read_nli, read_sts

    data = shared_data_dir()
    seen: dict[str, None] = {}
    for files, fmt in ((KORSTS_FILES, "korsts"), (STSB_FILES, "stsb")):
        for name in files:
            sts = read_sts(data / name, fmt)
            for pair in zip(sts.sentences1, sts.sentences2, strict=True):
                seen.update(dict.fromkeys(pair))
    for name in KORNLI_FILES:
        nli = read_nli(data / name)
        for pair in zip(nli.premises, nli.hypotheses, strict=True):
            seen.update(dict.fromkeys(pair))
    return list(seen)


def write_corpus(folder: Path, n: int) -> tuple[list[Path], int]:
    """`n` rows (the unique sentences cycled, ids s0000000...) in four files; (files, unique count)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pool = unique_sentences()
    rows = [(f"s{i:07d}", pool[i % len(pool)]) for i in range(n)]
    folder.mkdir(parents=True, exist_ok=True)
    cut = [len(rows) * k // 4 for k in range(5)]
    parts = [rows[cut[k] : cut[k + 1]] for k in range(4)]
    files = [folder / "0.jsonl", folder / "1.jsonl.gz", folder / "2.csv", folder / "3.parquet"]
    lines = "".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in parts[0])
    files[0].write_text(lines, encoding="utf-8")
    lines = "".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in parts[1])
    files[1].write_bytes(gzip.compress(lines.encode("utf-8"), mtime=0))
    with open(files[2], "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "text"])
        writer.writerows(parts[2])
    pq.write_table(pa.table({"id": [i for i, _ in parts[3]], "text": [t for _, t in parts[3]]}), files[3])
    return files, len(pool)


def single_process(files: list[Path]) -> dict[str, Any]:
    """(a): the corpus read as Ray reads it, encoded by one process on all threads, as `munjang encode`."""
    import torch

    from munjang import load_encoder
    from munjang.distributed import read_corpus

    corpus = read_corpus(files)
    encoder = load_encoder(device="cpu")
    encoder.warmup()
    start = time.perf_counter()
    vectors = encoder.encode(corpus.texts, show_progress_bar=False)
    seconds = time.perf_counter() - start
    print(f"(a) one process, {torch.get_num_threads()} threads: {len(corpus):,} in {seconds:.1f} s")
    return {
        "threads": torch.get_num_threads(),
        "seconds": seconds,
        "sentences_per_second": len(corpus) / seconds,
        "ids": corpus.ids,
        "vectors": vectors,
    }


def start_ray(cpus: int) -> float:
    import ray

    start = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, logging_level=logging.WARNING)
    return time.perf_counter() - start


def stamped(line: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {line}", flush=True)


def on_ray(files: list[Path], out: Path, args: argparse.Namespace, overwrite: bool = True) -> dict[str, Any]:
    """`encode_with_ray` on a fresh local Ray: (b) from scratch, or (`overwrite=False`) the rerun of
    a killed encode; the summary plus the Ray start-up seconds."""
    import ray

    from munjang.distributed import encode_with_ray

    startup = start_ray(args.workers * args.threads_per_worker)
    try:
        summary = encode_with_ray(
            files,
            out,
            workers=args.workers,
            threads=args.threads_per_worker,
            shard_size=args.shard_size,
            overwrite=overwrite,
            progress=stamped,
            progress_bars=False,
        )
    finally:
        ray.shutdown()
    return {**summary, "ray_start_seconds": startup}


def kill_midway(files: list[Path], out: Path, args: argparse.Namespace, shards: int) -> dict[str, Any]:
    """Run `munjang encode --ray` in a subprocess and SIGKILL it once `--kill-at` of the shards exist;
    make sure everything it started is gone; report what is on disk."""
    command = [sys.executable, "-m", "munjang.cli", "encode", *map(str, files), "--ray", "-o", str(out)]
    command += ["--workers", str(args.workers), "--threads", str(args.threads_per_worker)]
    command += ["--shard-size", str(args.shard_size), "--force"]
    target = max(1, int(shards * args.kill_at))
    log = out.with_suffix(".log")
    start = time.perf_counter()
    with open(log, "w") as f:
        process = subprocess.Popen(command, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while len(list(out.glob("part-*.parquet"))) < target:
            if process.poll() is not None:
                raise RuntimeError(f"the driver exited early (status {process.returncode}); see {log}")
            time.sleep(0.2)
        tree = process_tree(process.pid)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        if process.poll() is None:
            process.kill()
    killed_at = time.perf_counter() - start
    leftovers = _reap(tree[1:])
    present = len(list(out.glob("part-*.parquet")))
    temporary = len(list(out.glob(".tmp-*")))
    print(
        f"killed the driver after {killed_at:.0f} s: {present}/{shards} shards, {temporary} temporary files"
    )
    return {
        "killed_after_seconds": killed_at,
        "shards_present_after_kill": present,
        "temporary_files_after_kill": temporary,
        "ray_processes_outliving_the_driver": leftovers,
    }


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _reap(pids: list[int], wait: float = 30.0) -> int:
    """Give the killed driver's Ray processes `wait` seconds to exit, then SIGKILL those still there
    (Ray's agents can outlive a SIGKILLed driver); return how many had to be killed."""
    deadline = time.monotonic() + wait
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = [p for p in pids if _alive(p)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return len(left)


def max_diff(out: Path, single: dict[str, Any]) -> float:
    from munjang.distributed import read_embeddings

    ids, vectors = read_embeddings(out)
    if ids != single["ids"]:
        raise AssertionError(f"{out}: ids differ from the corpus order")
    return float(np.abs(vectors - single["vectors"]).max())


class LoadMeter:
    """Samples the 1-minute load average in the background; `phase(name)` records the mean since the
    previous call."""

    def __init__(self, every: float = 5.0) -> None:
        self.samples: list[float] = []
        self.means: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every,), daemon=True)
        self._thread.start()

    def _run(self, every: float) -> None:
        while not self._stop.wait(every):
            self.samples.append(os.getloadavg()[0])

    def phase(self, name: str) -> None:
        taken, self.samples = self.samples, []
        self.means[name] = round(sum(taken) / len(taken), 2) if taken else os.getloadavg()[0]

    def stop(self) -> dict[str, float]:
        self._stop.set()
        return self.means


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress shows in a log file
    env = environment()
    env.update({name: metadata.version(name) for name in ("ray", "pyarrow")})
    print_environment(env)
    files, unique = write_corpus(args.work / "corpus", args.sentences)
    print(
        f"corpus: {args.sentences:,} rows ({unique:,} unique sentences) in {', '.join(f.name for f in files)}"
    )

    load = LoadMeter()
    single = single_process(files)
    load.phase("single_process")
    ray_run = on_ray(files, args.work / "ray", args)
    load.phase("ray")
    ray_rate = ray_run["total_rows"] / ray_run["seconds"]
    print(f"(b) Ray {ray_run['workers']} x {ray_run['threads_per_worker']}: {ray_rate:.0f} sentences/s")
    ray_diff = max_diff(args.work / "ray", single)

    killed = kill_midway(files, args.work / "resume", args, ray_run["shards"])
    rerun = on_ray(files, args.work / "resume", args, overwrite=False)
    load.phase("resume")
    expected = ray_run["shards"] - killed["shards_present_after_kill"]
    resume_check = {
        **killed,
        "shards": rerun["shards"],
        "shards_reencoded": rerun["shards_encoded"],
        "shards_skipped": rerun["shards_skipped"],
        "temporary_files_removed": rerun["temporary_files_removed"],
        "rerun_seconds": rerun["seconds"],
        "reencoded_exactly_the_missing": rerun["shards_encoded"] == expected,
        "max_abs_diff_to_single_process": max_diff(args.work / "resume", single),
    }
    result = {
        "benchmark": "ray_encode",
        "command": " ".join(["python", "bench/ray_encode.py", *(argv if argv is not None else sys.argv[1:])]),
        "environment": env,
        "model": "all-MiniLM-L6-v2 (embedded), torch fp32",
        "sentences": args.sentences,
        "unique_sentences": unique,
        "shard_size": args.shard_size,
        "single_process": {k: v for k, v in single.items() if k not in ("ids", "vectors")},
        "ray": {**ray_run, "sentences_per_second": ray_rate},
        "ratio_ray_to_single": ray_rate / single["sentences_per_second"],
        "ratio_ray_pipeline_to_single": (ray_run["total_rows"] / ray_run["encode_seconds"])
        / single["sentences_per_second"],
        "max_abs_diff": ray_diff,
        "resume": resume_check,
        "mean_load_average_1min": load.stop(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "environment"}, indent=2, ensure_ascii=False))
    print(f"wrote {args.out}")
    if not resume_check["reencoded_exactly_the_missing"]:
        raise SystemExit(f"resume re-encoded {rerun['shards_encoded']} shards, expected {expected}")


if __name__ == "__main__":
    main()
