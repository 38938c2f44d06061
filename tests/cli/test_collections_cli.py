"""`munjang index list` and `munjang index drop` on every backend (folder, PostgreSQL, Qdrant's
local mode): a collection created by the CLI is listed, dropped after confirmation, and gone; every
refusal is one `error:` line and a non-zero exit, with nothing removed."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from munjang.search.collection.collection import Collection
from tests.helpers.cli import run_cli
from tests.helpers.collection_backends import fresh_database, qdrant_url
from tests.helpers.collection_places import Place, writer_holding_the_lock


@pytest.fixture(params=["embedded", "postgres", "qdrant"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[list[str], list[str], str]:
    """(options naming the place for `list`, for the other commands, and how a collection is named)."""
    if request.param == "embedded":
        return ["--dir", str(tmp_path)], [], str(tmp_path) + "/"
    url = (
        qdrant_url(tmp_path)
        if request.param == "qdrant"
        else fresh_database(request.getfixturevalue("postgres_url"))
    )
    return ["--backend", url], ["--backend", url], ""


def test_created_listed_dropped_through_the_cli(place, minilm_path, capsys, monkeypatch) -> None:
    listing, options, prefix = place
    for name in ("news", "kept"):
        code, _, err = run_cli(
            ["index", "create", prefix + name, "-m", str(minilm_path), *options], capsys, monkeypatch
        )
        assert code == 0, err
    code, out, _ = run_cli(["index", "list", *listing], capsys, monkeypatch)
    assert (code, out.split()) == (0, ["kept", "news"])
    code, out, err = run_cli(["index", "drop", prefix + "news", *options, "--yes"], capsys, monkeypatch)
    assert code == 0 and out.startswith("dropped "), err
    code, out, _ = run_cli(["index", "list", *listing, "--json"], capsys, monkeypatch)
    assert (code, json.loads(out)) == (0, ["kept"])
    code, out, err = run_cli(["index", "drop", prefix + "news", *options, "--yes"], capsys, monkeypatch)
    assert code == 2 and err.startswith("error: ") and "no such collection" in err
    assert err.count("\n") == 1 and "Traceback" not in err


class Terminal(io.StringIO):
    """Answers typed at a terminal."""

    def isatty(self) -> bool:
        return True


def test_a_drop_asks_first(tmp_path: Path, encoder, capsys, monkeypatch) -> None:
    Collection.create(tmp_path / "c", encoder=encoder).close()
    code, _, err = run_cli(["index", "drop", str(tmp_path / "c")], capsys, monkeypatch)  # stdin: no terminal
    assert code == 2 and err == f"error: dropping {tmp_path / 'c'} needs confirmation: pass --yes\n"
    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    code, _, err = run_cli(["index", "drop", str(tmp_path / "c")], capsys, monkeypatch)
    assert code == 1 and "not dropped" in err
    assert Collection.names(tmp_path) == ["c"]
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    code, _, err = run_cli(["index", "drop", str(tmp_path / "c")], capsys, monkeypatch)
    assert code == 0, err
    assert Collection.names(tmp_path) == []


def test_refusals_are_one_error_line(tmp_path: Path, encoder, capsys, monkeypatch) -> None:
    place = Place("embedded", tmp_path, None)  # type: ignore[arg-type]
    with place.create("busy", encoder) as collection:
        collection.add(["a"], ["서울의 날씨"])
    with writer_holding_the_lock(place, "busy"):
        code, _, err = run_cli(["index", "drop", str(place.location("busy")), "--yes"], capsys, monkeypatch)
    assert code == 2 and "another process is writing" in err and err.count("\n") == 1
    (tmp_path / "photos").mkdir()
    code, _, err = run_cli(["index", "drop", str(tmp_path / "photos"), "--yes"], capsys, monkeypatch)
    assert code == 2 and "not a munjang collection folder" in err
    code, _, err = run_cli(
        ["index", "list", "--dir", str(tmp_path), "--backend", "qdrant+local://x"], capsys, monkeypatch
    )
    assert code == 2 and err == "error: give --dir or --backend, not both\n"
    monkeypatch.setenv("MUNJANG_BACKEND", "qdrant+local://x")  # an explicit --dir wins over it
    code, out, _ = run_cli(["index", "list", "--dir", str(place.where)], capsys, monkeypatch)
    assert (code, out) == (0, "busy\n")
    code, _, err = run_cli(["index", "list", "--dir", str(tmp_path / "none")], capsys, monkeypatch)
    assert code == 2 and "no such folder" in err
    assert Collection.names(place.where) == ["busy"] and (tmp_path / "photos").is_dir()
