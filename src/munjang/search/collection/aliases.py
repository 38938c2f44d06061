"""Aliases: names that point at a collection, for every opener.

A folder's aliases are names in that folder of collections; a database's (PostgreSQL, or Qdrant's
records folder) names in that database. Where they are kept is each backend's (`Backend.aliases`,
reached by `aliases_of`), always switched atomically. An opened collection stays the one its alias
named when it was opened, so a search in flight finishes where it began.

`resolve(location, backend)` is what every opener calls: a collection is itself; a name that is an
alias is the collection it points at now.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..backends.base import Aliases
from ..backends.schemes import aliases_of

__all__ = ["Aliases", "aliases_of", "read_aliases", "remove_alias", "resolve", "set_alias"]


def read_aliases(where: str | os.PathLike[str]) -> dict[str, str]:
    """The aliases in `where` (a folder of collections, or a database URL): alias -> collection."""
    return aliases_of(where).read()


def set_alias(where: str | os.PathLike[str], name: str, target: str) -> str | None:
    """Point the alias `name` at the collection `target` (both names in `where`), atomically;
    returns the collection it pointed at before (None: a new alias)."""
    return aliases_of(where).set(name, target)


def remove_alias(where: str | os.PathLike[str], name: str) -> bool:
    """Remove the alias `name` from `where`; False where there was none."""
    return aliases_of(where).remove(name)


def resolve(location: str | os.PathLike[str], backend: str | None = None) -> str | Path:
    """The collection `location` names (a folder, or with `backend` a name in that database):
    itself, or the collection its name is an alias of (in its parent folder, or that database)."""
    if backend is not None:
        return aliases_of(backend).resolve(str(location))
    folder = Path(location)
    return folder.parent / aliases_of(folder.parent).resolve(folder.name)
