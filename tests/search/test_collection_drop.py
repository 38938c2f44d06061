"""Dropping a collection on every backend (folder, PostgreSQL, Qdrant's local mode): it leaves the
listing, its name is free for a new, empty collection, the others are untouched; an unknown name is
a not-found error; a drop while another process holds the writer lock is refused with nothing lost;
and a folder that is not a munjang collection is never removed. All on the real engines."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from munjang.search import CollectionBusyError, CollectionError, CollectionNotFoundError
from munjang.search.collection.collection import Collection
from tests.helpers.collection_backends import qdrant_url
from tests.helpers.collection_places import Place, writer_holding_the_lock

DOCS = {"a": "서울의 날씨가 맑다", "b": "주식 시장이 급락했다", "c": "고양이가 낮잠을 잔다"}


@pytest.fixture(params=["embedded", "postgres", "qdrant"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    return Place(request.param, tmp_path, request)


def _filled(place: Place, name: str, encoder) -> None:
    with place.create(name, encoder) as collection:
        collection.add(list(DOCS), list(DOCS.values()))


def test_a_dropped_collection_is_gone_and_its_name_is_free(place: Place, encoder) -> None:
    _filled(place, "news", encoder)
    _filled(place, "kept", encoder)
    assert place.names() == ["kept", "news"]
    place.drop("news")
    assert place.names() == ["kept"]
    with pytest.raises(CollectionError, match="no such collection"):
        place.open("news", encoder)
    with place.create("news", encoder) as again:  # the same name: a new, empty collection
        assert len(again) == 0 and again.search("고양이", k=3) == []
        again.add(["x"], ["강아지 뛰어논다"])
        assert [h.id for h in again.search("강아지", k=3, mode="lexical")] == ["x"]
    with place.open("kept", encoder) as kept:  # the other collection is untouched
        assert sorted(kept.ids()) == sorted(DOCS)
        assert kept.search("고양이 낮잠", k=1)[0].id == "c"
    assert place.names() == ["kept", "news"]


def test_an_unknown_name_is_not_found(place: Place) -> None:
    with pytest.raises(CollectionNotFoundError, match="no such collection"):
        place.drop("missing")


def test_a_drop_is_refused_while_another_process_writes(place: Place, encoder) -> None:
    _filled(place, "busy", encoder)
    with writer_holding_the_lock(place, "busy"):
        with pytest.raises(CollectionBusyError, match="another process"):
            place.drop("busy")
        assert place.names() == ["busy"]
    with place.open("busy", encoder) as collection:  # nothing was lost
        assert sorted(collection.ids()) == sorted(DOCS)
        assert collection.check() == []
    place.drop("busy")
    assert place.names() == []


def test_a_folder_that_is_not_a_collection_is_never_removed(tmp_path: Path, encoder) -> None:
    plain = tmp_path / "photos"
    plain.mkdir()
    (plain / "me.jpg").write_bytes(b"not a collection")
    with pytest.raises(CollectionError, match="not a munjang collection folder") as refused:
        Collection.drop(plain)
    assert not isinstance(refused.value, CollectionNotFoundError)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "collection.db").write_bytes(b"some other program's file")
    with pytest.raises(CollectionError):
        Collection.drop(foreign)
    Collection.create(tmp_path / "real", encoder=encoder).close()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(CollectionError, match="is a link"):
        Collection.drop(tmp_path / "link")
    with pytest.raises(CollectionError):
        Collection.drop(tmp_path / "me.jpg")
    assert (plain / "me.jpg").read_bytes() == b"not a collection"
    assert (foreign / "collection.db").read_bytes() == b"some other program's file"
    assert (tmp_path / "real" / "collection.db").is_file()


def test_a_drop_left_half_done_is_not_listed(tmp_path: Path, encoder) -> None:
    """A process killed after hiding the folder leaves a hidden folder that no listing shows."""
    Collection.create(tmp_path / "c", encoder=encoder).close()
    os.rename(tmp_path / "c", tmp_path / ".c.dropping-1")
    assert Collection.names(tmp_path) == []
    Collection.create(tmp_path / "c", encoder=encoder).close()
    assert Collection.names(tmp_path) == ["c"]


def test_a_qdrant_collection_open_in_this_process_is_refused(tmp_path: Path, encoder) -> None:
    url = qdrant_url(tmp_path)
    collection = Collection.create("open", backend=url, encoder=encoder)
    try:
        with pytest.raises(CollectionBusyError, match="open in this process"):
            Collection.drop("open", backend=url)
    finally:
        collection.close()
    Collection.drop("open", backend=url)
    assert Collection.names(url) == []


@pytest.mark.parametrize("kind", ["embedded", "postgres"])  # Qdrant's local mode refuses such a drop
def test_a_writer_opened_before_the_drop_finds_it_gone(kind: str, tmp_path: Path, request, encoder) -> None:
    """A collection dropped while another process (here: another object) has it open: its next
    write fails naming the drop, and leaves nothing behind that would block a new collection."""
    place = Place(kind, tmp_path, request)
    _filled(place, "news", encoder)
    with place.open("news", encoder) as stale:
        place.drop("news")
        with pytest.raises(Exception) as refused:
            stale.add(["z"], ["늦게 온 문서"])
        if place.url is None:
            assert isinstance(refused.value, CollectionNotFoundError), repr(refused.value)
            assert "was dropped" in str(refused.value)
        else:  # PostgreSQL: its tables are gone, which the driver reports
            assert Collection.is_storage_error(refused.value), repr(refused.value)
        assert place.names() == []
    with place.create("news", encoder) as again:
        assert len(again) == 0


def test_a_qdrant_server_that_fails_the_drop_gets_its_records_back(tmp_path: Path, encoder) -> None:
    """The records folder is hidden before the Qdrant collection is deleted; a server that refuses
    (here: nothing listens, the real network path) puts the folder back, nothing lost."""
    local = qdrant_url(tmp_path)
    with Collection.create("news", backend=local, encoder=encoder, tokenizer="word") as collection:
        collection.add(list(DOCS), list(DOCS.values()))
    records = local.removeprefix("qdrant+local://")
    server = f"qdrant://127.0.0.1:9{records}?timeout=5"
    with pytest.raises(Exception) as refused:
        Collection.drop("news", backend=server)
    assert Collection.is_storage_error(refused.value), repr(refused.value)
    assert Collection.names(local) == ["news"] and sorted(os.listdir(records)) == ["news"]
    with Collection.open("news", backend=local, encoder=encoder) as collection:
        assert sorted(collection.ids()) == sorted(DOCS)


def test_postgres_refuses_a_schema_it_did_not_make_and_a_session_that_keeps_the_tables(
    tmp_path: Path, request: pytest.FixtureRequest, encoder, monkeypatch
) -> None:
    import psycopg

    place = Place("postgres", tmp_path, request)
    assert place.url is not None
    with psycopg.connect(place.url, autocommit=True) as conn:
        conn.execute('CREATE SCHEMA "munjang_other"; CREATE TABLE "munjang_other".meta (key text)')
        with pytest.raises(CollectionError, match="not a munjang collection"):
            Collection.drop("other", backend=place.url)
        assert conn.execute("SELECT to_regclass('munjang_other.meta')").fetchone()[0] is not None
    _filled(place, "news", encoder)
    monkeypatch.setattr("munjang.search.backends.postgres.backend.DROP_LOCK_TIMEOUT", "200ms")
    with psycopg.connect(place.url) as reader:  # a transaction still reading the collection's table
        reader.execute('SELECT count(*) FROM "munjang_news".documents').fetchone()
        with pytest.raises(CollectionBusyError, match="kept it in use"):
            place.drop("news")
        reader.rollback()
    assert place.names() == ["news", "other"]
    with place.open("news", encoder) as collection:
        assert sorted(collection.ids()) == sorted(DOCS)
    place.drop("news")
    assert place.names() == ["other"]
