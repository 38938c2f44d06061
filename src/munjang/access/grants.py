"""What one request may do: its key's name, scopes and (optionally) the collections it may touch."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Scope = Literal["read", "write", "admin"]
# read: embeddings, similarity, rerank, search; write: add, delete, upload; admin: create, drop,
# snapshots, aliases. Each is granted on its own: a key that writes does not read unless given both.
SCOPES: tuple[Scope, ...] = ("read", "write", "admin")


def parse_scopes(values: Iterable[str]) -> frozenset[Scope]:
    """The scopes named in `values` (each `read`, `write` or `admin`); ValueError naming a wrong one."""
    found = set()
    for value in values:
        name = value.strip().lower()
        if name not in SCOPES:
            raise ValueError(f"unknown scope {value!r}: use {', '.join(SCOPES)}")
        found.add(name)
    if not found:
        raise ValueError(f"a key needs at least one scope ({', '.join(SCOPES)})")
    return frozenset(found)


@dataclass(frozen=True)
class Grant:
    """A request's rights: `name` (the key's, for the audit log), `scopes`, and `collections`
    (None: every collection)."""

    name: str
    scopes: frozenset[Scope]
    collections: frozenset[str] | None = None

    def allows(self, scope: Scope) -> bool:
        return scope in self.scopes

    def reaches(self, collection: str) -> bool:
        """Whether this key may touch `collection`."""
        return self.collections is None or collection in self.collections


# The server's single `--api-key`, and a server with no key at all: every scope, every collection.
FULL = Grant("api-key", frozenset(SCOPES))
OPEN = Grant("anonymous", frozenset(SCOPES))
