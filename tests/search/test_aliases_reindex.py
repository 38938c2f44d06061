"""Aliases (a name in a collections folder pointing at a collection, switched atomically) and
reindex (a new collection from the stored documents, resumable), through the API and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from munjang.search import CollectionError
from munjang.search.backends.folder.aliases import FILE
from munjang.search.collection import reindex as reindex_module
from munjang.search.collection.aliases import read_aliases, remove_alias, set_alias
from munjang.search.collection.collection import Collection
from tests.helpers.cli import run_cli


def _make(folder: Path, encoder: Any, texts: list[str]) -> None:
    with Collection.create(folder, encoder=encoder, tokenizer="word") as col:
        col.add([f"d{i}" for i in range(len(texts))], texts, [{"i": i} for i in range(len(texts))])


def test_an_alias_switch_moves_new_opens_and_leaves_open_ones_where_they_began(
    encoder, tmp_path: Path
) -> None:
    _make(tmp_path / "v1", encoder, ["고양이가 잔다", "시장이 열렸다"])
    _make(tmp_path / "v2", encoder, ["고양이가 잔다", "시장이 열렸다", "강아지가 뛴다"])
    assert set_alias(tmp_path, "prod", "v1") is None
    before = Collection.open(tmp_path / "prod", encoder=encoder, readonly=True)
    assert set_alias(tmp_path, "prod", "v2") == "v1"
    with Collection.open(tmp_path / "prod", encoder=encoder, readonly=True) as after:
        assert len(after) == 3 and after.location == str(tmp_path / "v2")
    assert len(before) == 2 and before.search("강아지", k=3, mode="lexical") == []  # still v1
    before.close()
    assert read_aliases(tmp_path) == {"prod": "v2"}
    assert remove_alias(tmp_path, "prod") and not remove_alias(tmp_path, "prod")
    with pytest.raises(CollectionError, match="no such collection"):
        Collection.open(tmp_path / "prod")


def test_aliases_refuse_a_collection_name_a_missing_target_and_a_tampered_file(
    encoder, tmp_path: Path
) -> None:
    _make(tmp_path / "v1", encoder, ["하나"])
    with pytest.raises(CollectionError, match="is a collection"):
        set_alias(tmp_path, "v1", "v1")
    with pytest.raises(CollectionError, match="no such collection"):
        set_alias(tmp_path, "prod", "v9")
    set_alias(tmp_path, "prod", "v1")
    body = json.loads((tmp_path / FILE).read_text())
    body["aliases"]["prod"] = "../elsewhere"
    (tmp_path / FILE).write_text(json.dumps(body))
    with pytest.raises(CollectionError, match="checksum"):
        Collection.open(tmp_path / "prod")


def test_reindex_builds_the_same_documents_and_resumes(encoder, tmp_path: Path, monkeypatch) -> None:
    texts = [f"문서 {i} 는 고양이 와 시장 에 관한 긴 이야기 " * (1 + i % 4) for i in range(30)]
    _make(tmp_path / "v1", encoder, texts)
    monkeypatch.setattr(reindex_module, "BATCH", 10)
    real = reindex_module._copy
    calls: list[int] = []

    def stop_after_one(*args: Any) -> None:
        if calls:
            raise KeyboardInterrupt
        calls.append(1)
        real(*args)

    with Collection.open(tmp_path / "v1", encoder=encoder, readonly=True) as src:
        monkeypatch.setattr(reindex_module, "_copy", stop_after_one)
        with pytest.raises(KeyboardInterrupt):
            src.reindex(tmp_path / "v2", encoder=encoder, chunking={"max_tokens": 16})
        monkeypatch.setattr(reindex_module, "_copy", real)
        with src.reindex(tmp_path / "v2", encoder=encoder, chunking={"max_tokens": 16}) as dst:
            ids = list(src.ids())
            assert list(dst.ids()) == ids
            assert [(d.text, d.metadata) for d in dst.get(ids)] == [
                (d.text, d.metadata) for d in src.get(ids)
            ]
            assert dst.info()["chunking"]["max_tokens"] == 16
            assert dst.info()["passages"] > src.info()["passages"]
            assert dst.check() == []


def test_the_cli_exports_imports_and_switches_an_alias(encoder, tmp_path: Path, capsys, monkeypatch) -> None:
    _make(tmp_path / "v1", encoder, ["고양이가 잔다", "시장이 열렸다"])
    code, out, err = run_cli(
        ["index", "export", str(tmp_path / "v1"), str(tmp_path / "v1.snap")], capsys, monkeypatch
    )
    assert code == 0, err
    assert "exported 2 documents" in out
    code, out, err = run_cli(
        ["index", "import", str(tmp_path / "v1.snap"), str(tmp_path / "v2")], capsys, monkeypatch
    )
    assert code == 0 and "imported 2 documents" in out, err
    code, out, err = run_cli(["index", "alias", "set", str(tmp_path / "prod"), "v2"], capsys, monkeypatch)
    assert code == 0 and out.strip() == f"{tmp_path / 'prod'} -> {tmp_path / 'v2'}", err
    code, out, _ = run_cli(["index", "alias", "list", str(tmp_path)], capsys, monkeypatch)
    assert out.splitlines() == ["prod\tv2"]
    code, out, err = run_cli(["index", "info", str(tmp_path / "prod"), "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out)["folder"] == str(tmp_path / "v2"), err
    (tmp_path / "bad.snap").write_bytes(b"not a tar")
    code, out, err = run_cli(
        ["index", "import", str(tmp_path / "bad.snap"), str(tmp_path / "v3")], capsys, monkeypatch
    )
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "v3").exists()
    code, out, err = run_cli(["index", "alias", "remove", str(tmp_path / "nope")], capsys, monkeypatch)
    assert code == 2 and "no such alias" in err
