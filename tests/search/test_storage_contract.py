"""The storage contract (`search/storage/base.py`): both stores and both backends provide every member
of their Protocol with the same parameters, and the factory picks a backend by location."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from munjang.search.backends.base import (
    Backend,
    DenseSearch,
    KeepsExtraVectors,
    SparseSearch,
    SparseVectors,
    Store,
    TokenSearch,
    TokenVectors,
)
from munjang.search.backends.folder.backend import FolderBackend
from munjang.search.backends.folder.sqlite_store import DocumentStore
from munjang.search.backends.postgres.backend import PostgresBackend
from munjang.search.backends.postgres.dense import PostgresDense
from munjang.search.backends.postgres.sparse import PostgresSparse
from munjang.search.backends.postgres.store import PostgresStore
from munjang.search.backends.qdrant.backend import QdrantBackend
from munjang.search.backends.qdrant.index import QdrantDense
from munjang.search.backends.qdrant.sparse import QdrantSparse
from munjang.search.backends.qdrant.tokens import QdrantTokens
from munjang.search.backends.schemes import collection_names, open_backend
from munjang.search.followers.dense import DenseIndex
from tests.helpers.paths import REPO

MISSING = object()
SRC = REPO / "src" / "munjang"


def members(protocol: type) -> dict[str, object]:
    names = {n for n in vars(protocol) if not n.startswith("_")} | set(
        getattr(protocol, "__annotations__", {})
    )
    return {n: getattr(protocol, n, None) for n in names}


def parameters(fn: object) -> list[str]:
    return list(inspect.signature(fn).parameters)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("protocol", "implementations"),
    [
        (Store, [DocumentStore, PostgresStore]),
        (Backend, [FolderBackend, PostgresBackend, QdrantBackend]),
        (DenseSearch, [DenseIndex, PostgresDense, QdrantDense]),
        (SparseVectors, [DocumentStore, PostgresStore]),
        (SparseSearch, [PostgresSparse, QdrantSparse]),
        (TokenVectors, [DocumentStore]),
        (TokenSearch, [QdrantTokens]),
        (KeepsExtraVectors, [FolderBackend, PostgresBackend, QdrantBackend]),
    ],
)
def test_every_implementation_has_the_protocols_members(protocol: type, implementations: list[type]) -> None:
    expected = members(protocol)
    assert expected, f"{protocol.__name__} lists no members"
    for cls in implementations:
        for name, member in expected.items():
            found = inspect.getattr_static(cls, name, MISSING)
            if found is MISSING:  # an attribute set in __init__
                source = inspect.getsource(cls.__init__)  # type: ignore[misc]
                assert re.search(rf"self\.{name}\b[^=\n]*=", source), f"{cls.__name__} has no {name}"
            elif callable(member) and not isinstance(found, property) and callable(getattr(cls, name)):
                ours = parameters(getattr(cls, name))
                assert ours == parameters(member), f"{cls.__name__}.{name}{ours} differs from the contract"


def test_the_factory_picks_a_backend_by_location(tmp_path: Path) -> None:
    assert isinstance(open_backend(tmp_path / "c"), FolderBackend)
    assert isinstance(open_backend("c", "postgresql://u@localhost/db"), PostgresBackend)
    assert isinstance(open_backend("c", "postgres://u@localhost/db"), PostgresBackend)
    assert isinstance(open_backend("c", "qdrant+local:///tmp/cols"), QdrantBackend)
    assert isinstance(open_backend("c", "qdrant://localhost:6333/var/cols"), QdrantBackend)
    with pytest.raises(ValueError, match="postgresql:// or .* URL; got 'mysql://x'"):
        open_backend("c", "mysql://x")
    with pytest.raises(ValueError, match="URL string"):
        open_backend("c", 5)  # type: ignore[arg-type]


def test_names_lists_collection_folders_only(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "collection.db").write_bytes(b"")
    (tmp_path / "not-one").mkdir()
    (tmp_path / "file.txt").write_text("x")
    assert collection_names(tmp_path) == ["a"]


def test_collection_has_no_backend_branches() -> None:
    """Backends are chosen in one place: the collection layer never names one, and finds what a
    backend can do by its capability Protocols, never by probing attributes."""
    for path in sorted((SRC / "search" / "collection").glob("*.py")):
        name = path.name
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):  # docstrings may say where data can live; code may not branch on it
            body = getattr(node, "body", None)
            first = body[0] if isinstance(body, list) and body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                body[0] = ast.Pass()  # type: ignore[index]
        code = ast.unparse(tree)
        words = ("postgres", "sqlite", r"\bfolder is None", "DocumentStore", "FileLock", "live_index.Dense")
        for word in words:
            assert not re.search(word, code), f"{name} names {word}"
        assert "hasattr(store" not in code and "hasattr(backend" not in code, f"{name} probes a backend"
