"""The storage contract (`search/storage/base.py`): both stores and both backends provide every member
of their Protocol with the same parameters, and the factory picks a backend by location."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from munjang.search.backends.base import (
    RETRIEVER_KINDS,
    Aliases,
    Backend,
    DenseSearch,
    LexicalSearch,
    Retriever,
    Store,
)
from munjang.search.backends.folder.aliases import FolderAliases
from munjang.search.backends.folder.backend import FolderBackend
from munjang.search.backends.folder.sqlite_store import DocumentStore
from munjang.search.backends.postgres.aliases import PostgresAliases
from munjang.search.backends.postgres.backend import PostgresBackend
from munjang.search.backends.postgres.dense import PostgresDense
from munjang.search.backends.postgres.lexical import PostgresLexical
from munjang.search.backends.postgres.sparse import PostgresSparse
from munjang.search.backends.postgres.store import PostgresStore
from munjang.search.backends.qdrant.backend import QdrantBackend
from munjang.search.backends.qdrant.index import QdrantDense, QdrantLexical
from munjang.search.backends.qdrant.sparse import QdrantSparse
from munjang.search.backends.qdrant.tokens import QdrantTokens
from munjang.search.backends.schemes import collection_names, open_backend
from munjang.search.followers.dense import DenseIndex
from munjang.search.followers.lexical import LexicalIndex
from munjang.search.followers.retrievers import LiveSparseIndex, LiveTokenIndex
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
        (Aliases, [FolderAliases, PostgresAliases]),
        (DenseSearch, [DenseIndex, PostgresDense, QdrantDense]),
        (LexicalSearch, [LexicalIndex, PostgresLexical, QdrantLexical]),
        (Retriever, [LiveSparseIndex, PostgresSparse, QdrantSparse, LiveTokenIndex, QdrantTokens]),
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


# What a store keeps for the extra retrievers (SPLADE vectors, ColBERT matrices), where its backend
# holds that kind (`Backend.retrievers`): the same methods, with the same parameters, in each.
EXTRA_STORES = {
    "sparse": (("cached_sparse", "put_sparse", "sparse_after"), [DocumentStore, PostgresStore]),
    "multi_vector": (("cached_token_vectors", "put_token_vectors", "token_vectors_after"), [DocumentStore]),
}


@pytest.mark.parametrize("kind", sorted(EXTRA_STORES))
def test_every_store_of_a_backend_holding_an_extra_retriever_keeps_its_vectors(kind: str) -> None:
    names, stores = EXTRA_STORES[kind]
    holding = {FolderBackend: DocumentStore, PostgresBackend: PostgresStore, QdrantBackend: DocumentStore}
    assert {holding[b] for b in holding if kind in b.retrievers} <= set(stores)
    for name in names:
        signatures = {tuple(parameters(getattr(store, name))) for store in stores}
        assert len(signatures) == 1, f"{name} differs between {[s.__name__ for s in stores]}"


def test_backends_declare_the_retrievers_they_hold() -> None:
    for backend in (FolderBackend, PostgresBackend, QdrantBackend):
        assert {"dense", "lexical"} <= backend.retrievers <= set(RETRIEVER_KINDS)
    assert PostgresBackend.retrievers == {"dense", "lexical", "sparse"}


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


def _classes(paths: list[Path]) -> dict[str, list[ast.ClassDef]]:
    found: dict[str, list[ast.ClassDef]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(node)
    return found


def test_the_collection_never_asks_what_a_backend_or_a_retriever_is() -> None:
    """No `isinstance` in `search/collection/` on a storage type: a class or Protocol of
    `search.backends` or `search.followers` (the backend hands out retrievers by kind and each runs a
    filter in the form it can, `base.Filter`, so the collection runs them alike). What a model can do
    (`passages.CountsTokens`, the tokenizers' Protocols) is not storage, and may be asked."""
    search = SRC / "search"
    forbidden = set(_classes([*(search / "backends").rglob("*.py"), *(search / "followers").rglob("*.py")]))
    assert {"Store", "Backend", "Retriever", "DenseSearch", "DenseIndex", "QdrantSparse"} <= forbidden
    found = []
    for path in sorted((search / "collection").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
            ):
                kinds = node.args[1]
                for kind in kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]:
                    name = ast.unparse(kind).rsplit(".", 1)[-1]
                    if name in forbidden:
                        found.append(f"{path.name}:{node.lineno}: isinstance(..., {ast.unparse(kind)})")
    assert not found, "\n".join(found)
