"""The one factory that picks a storage backend: a folder by default, a database by URL scheme."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .base import Aliases, Backend

# URL scheme -> "module:class" under munjang.search.backends; imported on first use (drivers are optional).
SCHEMES = {
    "postgresql": "postgres.backend:PostgresBackend",
    "postgres": "postgres.backend:PostgresBackend",
    "qdrant": "qdrant.backend:QdrantBackend",
    "qdrant+local": "qdrant.backend:QdrantBackend",
}


def _backend_class(scheme: str) -> Any:
    module, _, name = SCHEMES[scheme].partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def _scheme(url: str) -> str:
    scheme = urlsplit(url).scheme
    if scheme not in SCHEMES:
        known = " or ".join(f"{s}://" for s in sorted(SCHEMES))
        raise ValueError(f"backend must be a {known} URL; got {url!r}")
    return scheme


def open_backend(location: str | os.PathLike[str], backend: str | None = None) -> Backend:
    """The backend for a collection: a folder when `backend` is None, else the collection named
    `location` in the database at the URL `backend`."""
    if backend is None:
        from .folder.backend import FolderBackend

        return FolderBackend(Path(location))
    if not isinstance(backend, str):
        raise ValueError(f"backend must be a URL string, got {type(backend).__name__}")
    backend_class: Any = _backend_class(_scheme(backend))
    result: Backend = backend_class(backend, str(location))
    return result


def collection_names(where: str | os.PathLike[str]) -> list[str]:
    """The collections in a folder of collection folders, or in the database at a URL."""
    if isinstance(where, str) and urlsplit(where).scheme in SCHEMES:
        names: list[str] = _backend_class(urlsplit(where).scheme).names(where)
        return names
    from .folder.backend import FolderBackend

    return FolderBackend.names(Path(where))


def aliases_of(where: str | os.PathLike[str]) -> Aliases:
    """Where the aliases of the collections in `where` are kept: a folder of collection folders,
    or the database at a URL (as for `collection_names`)."""
    if isinstance(where, str) and urlsplit(where).scheme in SCHEMES:
        aliases: Aliases = _backend_class(urlsplit(where).scheme).aliases(where)
        return aliases
    from .folder.backend import FolderBackend

    return FolderBackend.aliases(Path(where))


def drop_collection(location: str | os.PathLike[str], backend: str | None = None) -> None:
    """Delete the collection at `location` (a folder, or with `backend` a name in that database),
    completely; refused while a writer holds it (`Backend.drop`)."""
    open_backend(location, backend).drop()


def is_storage_error(error: BaseException) -> bool:
    """True for an error raised by a backend's database driver (a server refused or went away),
    which callers report as such instead of as a bug."""
    classes = {_backend_class(scheme) for scheme in SCHEMES}
    return any(cls.is_error(error) for cls in classes)
