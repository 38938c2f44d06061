"""Aliases on every backend: a folder's (aliases.json), a PostgreSQL database's (a table changed in
one transaction) and Qdrant's records folder; resolved by `Collection.open`, the CLI and the server."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from munjang.search import CollectionError, CollectionNotFoundError
from munjang.search.collection.aliases import aliases_of, read_aliases, remove_alias, set_alias
from munjang.server import ServerSettings, create_app
from tests.helpers.cli import run_cli
from tests.helpers.collection_backends import Backend, fresh_database, qdrant_url
from tests.helpers.server import LOCAL


def _place(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "embedded":
        return Backend("embedded", tmp_path)
    if request.param == "qdrant":
        return Backend("qdrant", tmp_path, qdrant_url(tmp_path))
    return Backend("postgres", tmp_path, fresh_database(request.getfixturevalue("postgres_url")))


@pytest.fixture(params=["embedded", "postgres", "qdrant"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Where the collections and their aliases live; a fresh database for PostgreSQL (the aliases
    table is the database's)."""
    return _place(request, tmp_path)


@pytest.fixture(params=["postgres", "qdrant"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A place named by a backend URL (the folder CLI is tested in test_aliases_reindex.py)."""
    return _place(request, tmp_path)


def _where(place: Backend) -> Any:
    return place.tmp_path if place.url is None else place.url


def _name(place: Backend, name: str) -> str:
    return Path(str(place.location(name))).name


def _make(place: Backend, name: str, encoder: Any, texts: list[str]) -> None:
    with place.create(name, encoder=encoder, tokenizer="word") as col:
        col.add([f"d{i}" for i in range(len(texts))], texts)


def test_an_alias_is_set_switched_and_removed_and_every_open_follows_it(place: Backend, encoder: Any) -> None:
    _make(place, "v1", encoder, ["고양이가 잔다", "시장이 열렸다"])
    _make(place, "v2", encoder, ["고양이가 잔다", "시장이 열렸다", "강아지가 뛴다"])
    where, v1, v2, prod = _where(place), _name(place, "v1"), _name(place, "v2"), _name(place, "prod")
    assert read_aliases(where) == {}
    assert set_alias(where, prod, v1) is None
    before = place.open("prod", encoder=encoder, readonly=True)
    assert len(before) == 2 and before.search("강아지가", k=3, mode="lexical") == []
    assert set_alias(where, prod, v2) == v1
    with place.open("prod", encoder=encoder, readonly=True) as after:
        assert len(after) == 3
        assert [h.id for h in after.search("강아지가", k=3, mode="lexical")] == ["d2"]
        assert [h.id for h in after.search("강아지가 뛴다", k=1)] == ["d2"]  # dense too
    assert len(before) == 2  # opened before the switch: stays on v1
    before.close()
    assert read_aliases(where) == {prod: v2}
    assert remove_alias(where, prod) and not remove_alias(where, prod)
    with pytest.raises(CollectionError, match="no such collection"):
        place.open("prod")


def test_an_alias_cannot_take_a_collection_name_nor_point_at_nothing(place: Backend, encoder: Any) -> None:
    _make(place, "v1", encoder, ["하나"])
    _make(place, "v2", encoder, ["둘"])
    where, v1, v2 = _where(place), _name(place, "v1"), _name(place, "v2")
    with pytest.raises(CollectionError, match="is a collection"):
        set_alias(where, v1, v2)
    with pytest.raises(CollectionNotFoundError, match="no"):
        set_alias(where, _name(place, "prod"), _name(place, "v9"))
    with pytest.raises(CollectionError, match="not paths"):
        set_alias(where, "../prod", v1)
    assert read_aliases(where) == {}
    with place.open("v1", encoder=encoder, readonly=True) as col:  # a collection is itself
        assert [d.text for d in col.get(["d0"])] == ["하나"]


def test_readers_see_the_old_target_or_the_new_one_while_it_switches(place: Backend, encoder: Any) -> None:
    _make(place, "v1", encoder, ["하나"])
    _make(place, "v2", encoder, ["둘"])
    where, v1, v2, prod = _where(place), _name(place, "v1"), _name(place, "v2"), _name(place, "prod")
    aliases = aliases_of(where)
    aliases.set(prod, v1)
    seen: set[str] = set()
    done = threading.Event()
    errors: list[BaseException] = []

    def read() -> None:
        try:
            while not done.is_set():
                seen.add(aliases_of(where).resolve(prod))
        except BaseException as e:  # reported below
            errors.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(30):
            aliases.set(prod, v2 if i % 2 == 0 else v1)
    finally:
        done.set()
        reader.join()
    assert not errors and seen <= {v1, v2} and seen
    assert aliases.read() == {prod: v1}


def test_the_cli_sets_lists_and_removes_an_alias_in_a_database(
    database: Backend, encoder: Any, capsys, monkeypatch
) -> None:
    place = database
    _make(place, "v1", encoder, ["고양이가 잔다"])
    url, v1, prod = place.url, _name(place, "v1"), _name(place, "prod")
    code, out, err = run_cli(["index", "alias", "set", prod, v1, "--backend", url], capsys, monkeypatch)
    assert code == 0 and out.strip() == f"{prod} -> {v1}", err
    code, out, err = run_cli(["index", "alias", "list", "--backend", url], capsys, monkeypatch)
    assert code == 0 and out.splitlines() == [f"{prod}\t{v1}"], err
    code, out, err = run_cli(["index", "info", prod, "--backend", url, "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out)["documents"] == 1, err
    assert v1 in json.loads(out)["folder"]
    code, out, err = run_cli(["index", "alias", "set", v1, v1, "--backend", url], capsys, monkeypatch)
    assert code == 2 and err.startswith("error: ") and "is a collection" in err
    code, out, err = run_cli(["index", "alias", "remove", prod, "--backend", url], capsys, monkeypatch)
    assert code == 0 and out.strip() == f"removed {prod}", err
    code, out, err = run_cli(["index", "alias", "remove", prod, "--backend", url], capsys, monkeypatch)
    assert code == 2 and "no such alias" in err
    code, out, err = run_cli(["index", "alias", "list"], capsys, monkeypatch)
    assert code == 2 and err.startswith("error: ")


def test_the_server_resolves_an_alias_of_its_database(encoder: Any, postgres_url: str) -> None:
    db = fresh_database(postgres_url)
    settings = ServerSettings(models={"mini": encoder}, api_key="k", collections_db=db)
    key = {"Authorization": "Bearer k"}
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        for name, texts in (("v1", ["고양이가 잔다"]), ("v2", ["고양이가 잔다", "강아지가 뛴다"])):
            assert client.post("/v1/collections", json={"name": name}, headers=key).status_code == 201
            docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)]
            added = client.post(f"/v1/collections/{name}/documents", json={"documents": docs}, headers=key)
            assert added.status_code == 200, added.text
        response = client.put("/v1/aliases/prod", json={"collection": "v1"}, headers=key)
        assert response.status_code == 200 and response.json()["previous"] is None, response.text
        assert client.get("/v1/collections/prod", headers=key).json()["documents"] == 1
        switched = client.put("/v1/aliases/prod", json={"collection": "v2"}, headers=key)
        assert switched.json()["previous"] == "v1"
        search = {"query": "강아지가", "mode": "lexical"}
        hits = client.post("/v1/collections/prod/search", json=search, headers=key).json()
        assert [h["id"] for h in hits["data"]] == ["d1"]
        assert read_aliases(db) == {"prod": "v2"}  # kept in the database, not in a folder
        listed = client.get("/v1/aliases", headers=key).json()["data"]
        assert listed == [{"alias": "prod", "collection": "v2"}]
        assert client.put("/v1/aliases/v1", json={"collection": "v2"}, headers=key).status_code == 409
        json_key = {**key, "Content-Type": "application/json"}
        assert client.delete("/v1/aliases/prod", headers=json_key).status_code == 200
        assert client.get("/v1/collections/prod", headers=key).status_code == 404
