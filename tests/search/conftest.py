"""Fixtures of the collection tests: `backend`, each test run once per storage backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.collection_backends import Backend, qdrant_url


@pytest.fixture(params=["embedded", "postgres", "qdrant"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Where the test's collections live: a folder, a PostgreSQL schema, or Qdrant's local mode."""
    if request.param == "embedded":
        return Backend("embedded", tmp_path)
    if request.param == "qdrant":
        return Backend("qdrant", tmp_path, qdrant_url(tmp_path))
    return Backend("postgres", tmp_path, request.getfixturevalue("postgres_url"))
