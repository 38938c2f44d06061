"""A collection on a full disk or on read-only media, on real file systems (a small tmpfs, filled
or remounted read-only): a clear error naming the problem, nothing committed lost, reads that do
not depend on what earlier processes left behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from munjang.search import Collection, ReadOnlyError, StorageFullError
from tests.helpers.cli import run_cli
from tests.helpers.media import fill, make_readonly, small_disk

TEXTS = ["고양이가 소파에서 잔다", "주식 시장이 급락했다", "The cat sleeps on the sofa"]


def long_texts(n: int) -> list[str]:
    return [f"문장 {i}번: 오늘 시장에서 고양이와 강아지가 함께 뛰어놀았다. " * 12 for i in range(n)]


def test_a_full_disk_is_one_clear_error_and_the_add_resumes(tmp_path: Path, encoder) -> None:
    with small_disk(tmp_path / "disk") as disk:
        with Collection.create(disk / "c", encoder=encoder) as collection:
            collection.add(["a", "b", "c"], TEXTS)
        collection = Collection.open(disk / "c", encoder=encoder)
        filler = fill(disk)
        ids = [f"d{i}" for i in range(30)]
        with pytest.raises(StorageFullError, match="disk is full"):
            collection.add(ids, long_texts(30))
        assert len(collection) == 3
        assert [h.id for h in collection.search("cat sofa", 1, mode="lexical")] == ["c"]
        filler.unlink()
        result = collection.add(ids, long_texts(30), on_conflict="skip")
        assert result.added == 30 and len(collection) == 33
        assert collection.check() == []
        collection.close()


def test_the_cli_names_a_full_disk_in_one_line(tmp_path: Path, encoder, capsys, monkeypatch) -> None:
    records = tmp_path / "docs.jsonl"
    records.write_text("".join(f'{{"id": "d{i}", "text": "{t}"}}\n' for i, t in enumerate(long_texts(30))))
    with small_disk(tmp_path / "disk") as disk:
        with Collection.create(disk / "c", encoder=encoder) as collection:
            collection.add(["a"], TEXTS[:1])
        filler = fill(disk)
        code, _, err = run_cli(["index", "add", str(disk / "c"), str(records)], capsys, monkeypatch)
        assert code == 2
        assert err.strip().splitlines()[-1].startswith("error:") and "disk is full" in err
        assert "Traceback" not in err and "cannot rollback" not in err
        filler.unlink()
        with Collection.open(disk / "c", encoder=encoder, readonly=True) as collection:
            assert len(collection) == 1 and collection.check() == []


@pytest.mark.parametrize("leftovers", [False, True])
def test_read_only_media_opens_read_only(tmp_path: Path, encoder, leftovers: bool) -> None:
    with small_disk(tmp_path / "disk") as disk:
        with Collection.create(disk / "c", encoder=encoder, index="hnsw") as collection:
            collection.add(["a", "b", "c"], TEXTS)
        if leftovers:  # what a reader killed mid-search leaves: the WAL's files beside the database
            for suffix in ("-wal", "-shm"):
                (disk / "c" / f"collection.db{suffix}").write_bytes(b"")
        make_readonly(disk)
        with Collection.open(disk / "c", encoder=encoder) as collection:
            assert collection.readonly and len(collection) == 3
            assert collection.search("cat sofa", 1, mode="lexical")[0].id == "c"
            assert collection.search("cat on a sofa", 1, mode="hybrid")[0].id == "c"
            assert collection.info()["documents"] == 3
            assert collection.check() == []
            with pytest.raises(ReadOnlyError, match="read-only media"):
                collection.add(["d"], ["new"])
            with pytest.raises(ReadOnlyError, match="read-only media"):
                collection.delete(["a"])
        with pytest.raises(ReadOnlyError, match="read-only media"):
            Collection.create(disk / "new", encoder=encoder)


def test_the_cli_on_read_only_media(tmp_path: Path, encoder, capsys, monkeypatch) -> None:
    text = tmp_path / "note.txt"
    text.write_text("고양이가 소파에서 잔다\n")
    with small_disk(tmp_path / "disk") as disk:
        with Collection.create(disk / "c", encoder=encoder) as collection:
            collection.add(["a", "b", "c"], TEXTS)
        make_readonly(disk)
        code, out, err = run_cli(["index", "search", str(disk / "c"), "-q", "cat sofa"], capsys, monkeypatch)
        assert code == 0, err
        assert "sofa" in out
        code, out, err = run_cli(["index", "info", str(disk / "c"), "--check"], capsys, monkeypatch)
        assert code == 0, err
        code, _, err = run_cli(["index", "add", str(disk / "c"), str(text)], capsys, monkeypatch)
        assert code == 2 and "read-only" in err and "Errno" not in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1


def test_copying_a_read_only_collection_gives_a_writable_one(tmp_path: Path, encoder) -> None:
    with small_disk(tmp_path / "disk") as disk:
        with Collection.create(disk / "c", encoder=encoder) as collection:
            collection.add(["a"], TEXTS[:1])
        make_readonly(disk)
        shutil.copytree(disk / "c", tmp_path / "copy")
    with Collection.open(tmp_path / "copy", encoder=encoder) as collection:
        assert not collection.readonly
        collection.add(["b"], TEXTS[1:2])
        assert len(collection) == 2
