"""The keys file: scoped API keys, stored hashed, with a format header and a checksum.

    {"format": "munjang-keys", "version": 1, "checksum": "sha256:<hex of the keys' canonical JSON>",
     "keys": [{"name": "search-page", "hash": "sha256:<hex>", "scopes": ["read"],
               "collections": ["docs"] | null, "created": "2026-12-06T02:40:00Z", "revoked": null}]}

A secret is `mj_` and 43 characters of `secrets.token_urlsafe(32)` (256 random bits), shown once by
`create_key`; only its SHA-256 is kept. A fast hash is enough for a secret that cannot be guessed
(a slow one, as for passwords, would cost every request milliseconds), and it lets a request's key
be found by its hash. Revoked keys stay in the file (named in `munjang keys list`), never matching.

`KeyRing` is the server's view of the file: `grant(secret)` stats the file first and reads it again
when its size, mtime or inode changed, so `munjang keys revoke` takes effect at the next request. The
file is written whole under a lock and renamed into place (`_util.atomic`): a reader never sees half.
A file that fails its checksum (edited by hand, damaged) is refused whole: no key of it is accepted.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import secrets
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._util.atomic import atomic_write
from ..errors import MunjangError
from .grants import SCOPES, Grant, Scope, parse_scopes

FORMAT = "munjang-keys"
VERSION = 1
PREFIX = "mj_"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# A keys file larger than this is refused before it is parsed (about 4,000 keys).
MAX_FILE_BYTES = 4_000_000


class KeyFileError(MunjangError):
    """A keys file that cannot be used (unreadable, not this format, checksum wrong), or a key
    operation the file refuses (a name already taken, an unknown name)."""


@dataclass(frozen=True)
class KeyRecord:
    """One key as stored: never its secret, only the secret's hash."""

    name: str
    hash: str
    scopes: tuple[Scope, ...]
    collections: tuple[str, ...] | None
    created: str
    revoked: str | None = None

    def grant(self) -> Grant:
        collections = None if self.collections is None else frozenset(self.collections)
        return Grant(self.name, frozenset(self.scopes), collections)


def hash_secret(secret: str) -> str:
    return "sha256:" + hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _checksum(keys: list[dict[str, Any]]) -> str:
    canonical = json.dumps(keys, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_keys(path: Path) -> list[KeyRecord]:
    """The keys in `path` (none when it does not exist), after checking its header and checksum."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return []
    if size > MAX_FILE_BYTES:
        raise KeyFileError(f"{path}: {size} bytes, over the limit of {MAX_FILE_BYTES} for a keys file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise KeyFileError(f"{path}: not a readable keys file ({e})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise KeyFileError(f'{path}: not a munjang keys file (no "format": "{FORMAT}")')
    if data.get("version") != VERSION:
        raise KeyFileError(f"{path}: keys file version {data.get('version')!r}; this munjang reads {VERSION}")
    keys = data.get("keys")
    if not isinstance(keys, list) or data.get("checksum") != _checksum(keys):
        raise KeyFileError(
            f"{path}: checksum mismatch (the file was changed by hand or damaged); "
            "manage keys with `munjang keys`"
        )
    try:
        return [
            KeyRecord(
                name=k["name"],
                hash=k["hash"],
                scopes=tuple(parse_scopes(k["scopes"])),
                collections=None if k["collections"] is None else tuple(k["collections"]),
                created=k["created"],
                revoked=k.get("revoked"),
            )
            for k in keys
        ]
    except (KeyError, TypeError, ValueError) as e:
        raise KeyFileError(f"{path}: a key entry is malformed ({e})") from None


def _write_keys(path: Path, records: list[KeyRecord]) -> None:
    keys = [{**asdict(r), "scopes": list(r.scopes), "collections": _listed(r.collections)} for r in records]
    data = {"format": FORMAT, "version": VERSION, "checksum": _checksum(keys), "keys": keys}
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")
        os.chmod(tmp, 0o600)

    atomic_write(path, write, fsync=True)


def _listed(values: tuple[str, ...] | None) -> list[str] | None:
    return None if values is None else list(values)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Held while one command reads, changes and writes the file: two at once never lose a key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def create_key(path: Path, name: str, scopes: Iterable[str], collections: Iterable[str] | None = None) -> str:
    """Add a key named `name` to the file and return its secret (shown once, never stored)."""
    if not NAME.fullmatch(name):
        raise KeyFileError(f"key name {name!r}: use 1-64 letters, digits, '_', '-' or '.'")
    try:
        granted = parse_scopes(scopes)
    except ValueError as e:
        raise KeyFileError(str(e)) from None
    limited = None if collections is None else tuple(dict.fromkeys(collections))
    if limited is not None and not limited:
        raise KeyFileError("--collection was given without a name")
    secret = PREFIX + secrets.token_urlsafe(32)
    with _locked(path):
        records = read_keys(path)
        if any(r.name == name for r in records):
            raise KeyFileError(f"a key named {name!r} already exists in {path}")
        order = tuple(s for s in SCOPES if s in granted)
        records.append(KeyRecord(name, hash_secret(secret), order, limited, _now()))
        _write_keys(path, records)
    return secret


def revoke_key(path: Path, name: str) -> KeyRecord:
    """Mark the key `name` revoked (it stays listed); a server reading the file refuses it at once."""
    with _locked(path):
        records = read_keys(path)
        for i, record in enumerate(records):
            if record.name == name:
                if record.revoked is None:
                    records[i] = KeyRecord(**{**asdict(record), "revoked": _now()})
                    _write_keys(path, records)
                return records[i]
    known = ", ".join(r.name for r in records) or "none"
    raise KeyFileError(f"no key named {name!r} in {path} (keys: {known})")


def list_keys(path: Path) -> list[KeyRecord]:
    """The keys in the file, revoked ones included."""
    if not path.exists():
        raise KeyFileError(f"{path}: no keys file (create a key with `munjang keys create`)")
    return read_keys(path)


class KeyRing:
    """A server's keys: the file read again whenever it changes (one `stat` per request)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._by_hash: dict[str, KeyRecord] = {}
        self._error: KeyFileError | None = None
        self.refresh()
        if self._error is not None:
            raise self._error

    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return stat.st_mtime_ns, stat.st_size, stat.st_ino

    def refresh(self) -> None:
        """Read the file again if it changed since it was last read."""
        stamp = self._stamp()
        if stamp == self._seen and self._seen is not None:
            return
        with self._lock:
            if stamp == self._seen and self._seen is not None:
                return
            try:
                records = read_keys(self.path)
            except KeyFileError as e:
                self._by_hash, self._error = {}, e
            else:
                self._by_hash = {r.hash: r for r in records if r.revoked is None}
                self._error = None
            self._seen = stamp

    def grant(self, secret: str) -> Grant | None:
        """The grant of the live key whose secret this is, else None. KeyFileError while the file is
        unusable: no key is accepted from a file that fails its checks."""
        self.refresh()
        if self._error is not None:
            raise self._error
        record = self._by_hash.get(hash_secret(secret))
        return None if record is None else record.grant()
