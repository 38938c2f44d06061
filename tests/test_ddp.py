"""DDP on CPU: `torchrun --nproc_per_node 2` (gloo) follows the loss curve of one process with the same
global batch. Slow (two extra interpreters), so it runs with `pytest -m slow`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from training_helpers import tiny_bert

WORKER = Path(__file__).with_name("ddp_worker.py")


def _curve(folder: Path) -> list[float]:
    lines = (folder / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["loss"] for line in lines if json.loads(line)["type"] == "train"]


@pytest.mark.slow
def test_two_processes_match_one_with_the_same_global_batch(tmp_path: Path) -> None:
    model = tiny_bert(tmp_path / "tiny", dropout=0.0)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(WORKER.parent)}
    subprocess.run(
        [sys.executable, str(WORKER), str(model), str(tmp_path / "one"), "--batch-size", "8"],
        check=True,
        env=env,
        timeout=600,
    )
    subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(WORKER), str(model), str(tmp_path / "two"), "--batch-size", "4"],
        check=True,
        env=env,
        timeout=600,
    )  # fmt: skip
    one, two = _curve(tmp_path / "one"), _curve(tmp_path / "two")
    assert len(one) == len(two) == 12  # 48 examples / global batch 8 x 2 epochs
    assert one[0] != one[-1]  # it trained
    for step, (a, b) in enumerate(zip(one, two, strict=True), start=1):
        assert b == pytest.approx(a, rel=1e-4, abs=1e-6), f"step {step}: one process {a}, two processes {b}"
