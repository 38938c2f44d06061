"""Where things are for the tests: the repository, ../shared beside it, the scripts run by path."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Scripts the tests run as a process of their own (`python PATH ...`, `torchrun PATH ...`).
SCRIPTS = Path(__file__).resolve().parent / "scripts"


def shared_dir() -> Path:
    return Path(os.environ.get("MUNJANG_SHARED", REPO.parent / "shared"))
