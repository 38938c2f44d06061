"""The aliases of a folder of collections (folder collections, or Qdrant collections' records).

They live in one file, `aliases.json`, in that folder: a format header, the aliases and a checksum
over them, verified on every read. A change rewrites the file whole and renames it into place
(`atomic_write`), under a lock file so two changes never lose one another; a reader sees the old
mapping or the new one, never half of it. Qdrant's own collection aliases do not fit a munjang
collection: its passages' records are a folder beside the engine's points (and in local mode each
collection has an engine of its own), so the alias must name the folder, which this file does.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ...._util.atomic import atomic_write
from ..base import CollectionError, CollectionNotFoundError, check_alias_names

FILE = "aliases.json"
FORMAT = "munjang-aliases"
VERSION = 1
DB_NAME = "collection.db"  # what makes a folder a collection, for every backend that keeps folders


def _checksum(aliases: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(aliases, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class FolderAliases:
    """The aliases kept in `root/aliases.json`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def read(self) -> dict[str, str]:
        path = self.root / FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise CollectionError(f"{path}: cannot read the aliases ({e})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
            raise CollectionError(f"{path}: not a munjang aliases file of version {VERSION}")
        aliases = data.get("aliases")
        if not isinstance(aliases, dict) or data.get("sha256") != _checksum(aliases):
            raise CollectionError(f"{path}: its checksum does not match (the file was altered or damaged)")
        return aliases

    def _write(self, aliases: dict[str, str]) -> None:
        body = {"format": FORMAT, "version": VERSION, "aliases": aliases, "sha256": _checksum(aliases)}
        text = json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True)
        atomic_write(self.root / FILE, lambda tmp: tmp.write_text(text, encoding="utf-8"), fsync=True)

    @contextmanager
    def _changing(self) -> Iterator[dict[str, str]]:
        """The aliases to change in place, written back whole when the block ends, one change at a time."""
        with open(self.root / f".{FILE}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            aliases = self.read()
            yield aliases
            self._write(aliases)

    def _is_collection(self, name: str) -> bool:
        return (self.root / name / DB_NAME).is_file()

    def set(self, alias: str, target: str) -> str | None:
        check_alias_names(str(self.root), alias, target)
        if self._is_collection(alias):
            raise CollectionError(f"{self.root / alias} is a collection: an alias cannot take its name")
        if not self._is_collection(target):
            raise CollectionNotFoundError(f"{self.root / target}: no such collection to point {alias!r} at")
        with self._changing() as aliases:
            before = aliases.get(alias)
            aliases[alias] = target
        return before

    def remove(self, alias: str) -> bool:
        if not (self.root / FILE).exists():
            return False
        with self._changing() as aliases:
            return aliases.pop(alias, None) is not None

    def resolve(self, name: str) -> str:
        if (self.root / name).exists():
            return name
        return self.read().get(name, name)


if TYPE_CHECKING:
    from ..base import Aliases

    _CONTRACT: type[Aliases] = FolderAliases  # mypy checks the class against the contract
