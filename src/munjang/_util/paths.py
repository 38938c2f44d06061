"""Where munjang keeps what it builds or downloads: one cache root, overridable by environment variables."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """munjang's cache folder: `$MUNJANG_CACHE`, else `~/.cache/munjang`."""
    env = os.environ.get("MUNJANG_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "munjang"


def models_root() -> Path:
    """Installed named models: `$MUNJANG_MODELS`, else `<cache root>/models`."""
    env = os.environ.get("MUNJANG_MODELS")
    return Path(env).expanduser() if env else cache_root() / "models"
