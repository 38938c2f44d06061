"""The keys file: hashed secrets, a format header and checksum verified before use, a ring that
follows the file as it changes, and writers that never lose each other's keys."""

from __future__ import annotations

import json
import stat
import threading
from pathlib import Path

import pytest

from munjang.access import KeyFileError, KeyRing, create_key, list_keys, revoke_key
from munjang.access.keys import hash_secret


def test_only_the_hash_is_stored_under_a_checked_header(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    secret = create_key(path, "web", ["read"], ["docs", "docs"])
    text = path.read_text()
    assert secret not in text and hash_secret(secret) in text
    data = json.loads(text)
    assert (
        data["format"] == "munjang-keys" and data["version"] == 1 and data["checksum"].startswith("sha256:")
    )
    assert data["keys"][0]["collections"] == ["docs"] and data["keys"][0]["revoked"] is None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_ring_follows_the_file(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    first = create_key(path, "a", ["read", "write"])
    ring = KeyRing(path)
    grant = ring.grant(first)
    assert grant is not None and grant.name == "a" and grant.allows("write") and not grant.allows("admin")
    assert grant.reaches("anything")
    second = create_key(path, "b", ["admin"], ["x"])
    later = ring.grant(second)
    assert later is not None and later.reaches("x") and not later.reaches("y")
    revoke_key(path, "a")
    assert ring.grant(first) is None
    assert [r.name for r in list_keys(path) if r.revoked] == ["a"]
    assert ring.grant("mj_" + "0" * 43) is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d["keys"][0].update(scopes=["read", "write", "admin"]),
        lambda d: d.update(format="other"),
        lambda d: d.update(version=2),
        lambda d: d.update(checksum="sha256:00"),
    ],
)
def test_a_changed_or_foreign_file_is_refused_whole(tmp_path: Path, damage) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "keys.json"
    secret = create_key(path, "a", ["read"])
    ring = KeyRing(path)
    data = json.loads(path.read_text())
    damage(data)
    path.write_text(json.dumps(data) + " ")  # another size: the ring reads it again
    with pytest.raises(KeyFileError):
        ring.grant(secret)
    with pytest.raises(KeyFileError):
        KeyRing(path)
    with pytest.raises(KeyFileError):
        create_key(path, "b", ["read"])  # nothing is written over a file that fails its checks


def test_names_and_scopes_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    for name, scopes in (("bad name", ["read"]), ("ok", ["root"]), ("ok", [])):
        with pytest.raises(KeyFileError):
            create_key(path, name, scopes)
    create_key(path, "ok", ["read"])
    with pytest.raises(KeyFileError, match="already exists"):
        create_key(path, "ok", ["read"])
    with pytest.raises(KeyFileError, match="no key named"):
        revoke_key(path, "nobody")


def test_writers_at_once_keep_every_key(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    threads = [threading.Thread(target=create_key, args=(path, f"k{i}", ["read"])) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.name for r in list_keys(path)) == sorted(f"k{i}" for i in range(16))
