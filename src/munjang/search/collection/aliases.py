"""Aliases: names in a folder of collections that point at one of its collections.

They live in one file, `aliases.json`, in that folder: a format header, the aliases and a checksum
over them, verified on every read. A change rewrites the file whole and renames it into place
(`atomic_write`), under a lock file so two changes never lose one another; a reader sees the old
mapping or the new one, never half of it. An opened collection stays the one its alias named when
it was opened, so a search in flight finishes where it began.

`resolve(folder)` is what every opener calls: a folder that is a collection is itself; a name that
is an alias in its parent folder is the collection it points at.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..._util.atomic import atomic_write
from ..backends.base import CollectionError, CollectionNotFoundError

FILE = "aliases.json"
FORMAT = "munjang-aliases"
VERSION = 1


def _checksum(aliases: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(aliases, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def read_aliases(root: Path) -> dict[str, str]:
    """The aliases of the collections folder `root` (alias -> collection name); {} where it has none."""
    path = Path(root) / FILE
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


def _write(root: Path, aliases: dict[str, str]) -> None:
    body = {"format": FORMAT, "version": VERSION, "aliases": aliases, "sha256": _checksum(aliases)}
    text = json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True)
    atomic_write(root / FILE, lambda tmp: tmp.write_text(text, encoding="utf-8"), fsync=True)


@contextmanager
def _changing(root: Path) -> Iterator[dict[str, str]]:
    """The aliases to change in place, written back whole when the block ends, one change at a time."""
    with open(root / f".{FILE}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        aliases = read_aliases(root)
        yield aliases
        _write(root, aliases)


def _is_collection(folder: Path) -> bool:
    return (folder / "collection.db").is_file()


def set_alias(root: Path, name: str, target: str) -> str | None:
    """Point the alias `name` at the collection `target` (both names in `root`), atomically; returns
    the collection it pointed at before (None: a new alias)."""
    root = Path(root)
    for word in (name, target):
        if not word or "/" in word or word.startswith("."):
            raise CollectionError(f"{word!r}: an alias and its target are names in {root}, not paths")
    if _is_collection(root / name):
        raise CollectionError(f"{root / name} is a collection: an alias cannot take its name")
    if not _is_collection(root / target):
        raise CollectionNotFoundError(f"{root / target}: no such collection to point {name!r} at")
    with _changing(root) as aliases:
        before = aliases.get(name)
        aliases[name] = target
    return before


def remove_alias(root: Path, name: str) -> bool:
    """Remove the alias `name`; False where there was none."""
    root = Path(root)
    if not (root / FILE).exists():
        return False
    with _changing(root) as aliases:
        return aliases.pop(name, None) is not None


def resolve(folder: Path) -> Path:
    """The collection folder `folder` names: itself, or the collection its name is an alias of in
    its parent folder."""
    folder = Path(folder)
    if folder.exists():
        return folder
    target = read_aliases(folder.parent).get(folder.name)
    return folder if target is None else folder.parent / target
