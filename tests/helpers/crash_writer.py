"""The writer process the crash tests kill: scripts/collection_writer.py, started and waited for
until it says it is ready (its collection open, about to add)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import SCRIPTS

WRITER = SCRIPTS / "collection_writer.py"


def start_writer(
    *args: str, env: dict[str, str] | None = None, script: Path = WRITER
) -> subprocess.Popen[str]:
    """`script ARGS` (collection_writer.py by default) in a process of its own (with this process's
    import path and `env` added), once it has printed "ready"."""
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full_env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise AssertionError(f"writer did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return proc


def first_commits(proc: subprocess.Popen[str], documents: int) -> str:
    """The writer's output up to the commit that brings it to `documents` committed documents
    (waiting for the event, however slow or busy the machine)."""
    assert proc.stdout is not None
    lines, count = [], 0
    while count < documents:
        line = proc.stdout.readline()
        assert line, f"the writer stopped before committing {documents} documents"
        lines.append(line)
        count += len(line.split()) - 1 if line.startswith("committed ") else 0
    return "".join(lines)
