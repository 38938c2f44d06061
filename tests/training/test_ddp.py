"""DDP on CPU: `torchrun --nproc_per_node 2` (gloo) follows the loss curve of one process with the same
global batch, with CosineSimilarityLoss and with MNRL (whose negatives are gathered across the
processes). Slow (extra interpreters), so it runs with `pytest -m slow`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import SCRIPTS
from tests.helpers.training import tiny_bert

WORKER = SCRIPTS / "ddp_worker.py"


def _curve(folder: Path) -> list[float]:
    lines = (folder / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["loss"] for line in lines if json.loads(line)["type"] == "train"]


def _run(model: Path, out: Path, batch_size: int, *extra: str, processes: int = 1) -> list[float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(WORKER.parent)}
    launcher = [sys.executable]
    if processes > 1:
        launcher += ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes)]
    command = [*launcher, str(WORKER), str(model), str(out), "--batch-size", str(batch_size), *extra]
    subprocess.run(command, check=True, env=env, timeout=600)
    return _curve(out)


@pytest.mark.slow
def test_two_processes_match_one_with_the_same_global_batch(tmp_path: Path) -> None:
    model = tiny_bert(tmp_path / "tiny", dropout=0.0)
    one = _run(model, tmp_path / "one", 8)
    two = _run(model, tmp_path / "two", 4, processes=2)
    assert len(one) == len(two) == 12  # 48 examples / global batch 8 x 2 epochs
    assert one[0] != one[-1]  # it trained
    for step, (a, b) in enumerate(zip(one, two, strict=True), start=1):
        assert b == pytest.approx(a, rel=1e-4, abs=1e-6), f"step {step}: one process {a}, two processes {b}"


@pytest.mark.slow
def test_mnrl_two_processes_match_one_with_the_same_global_batch(tmp_path: Path) -> None:
    """51 triplets, global batch 8: six batches of 8, then one of 3 that the processes share 2 + 1.

    Without gathering (`--no-gather`) each process would score 4 anchors against 8 candidates
    instead of 16, and the first loss would already differ (about 2.29 instead of 3.07).
    """
    model = tiny_bert(tmp_path / "tiny", dropout=0.0)
    mnrl = ("--loss", "mnrl", "--examples", "51")
    one = _run(model, tmp_path / "one", 8, *mnrl)
    two = _run(model, tmp_path / "two", 4, *mnrl, processes=2)
    assert len(one) == len(two) == 14  # 7 batches x 2 epochs
    assert sum(one[7:13]) < sum(one[:6])  # it trained: epoch 2's batches of 8 score lower than epoch 1's
    for step, (a, b) in enumerate(zip(one, two, strict=True), start=1):
        assert b == pytest.approx(a, rel=1e-4, abs=1e-6), f"step {step}: one process {a}, two processes {b}"
