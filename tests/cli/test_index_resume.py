"""`munjang index add` as a new user meets it: a rerun resumes without options when the documents are
unchanged, Ctrl-C says what was stored and how to go on, search prints one line per hit with scores
a reader can place, and errors name what to do on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from munjang.cli.index_text import SNIPPET_CHARS, snippet
from munjang.search.collection.collection import Collection
from tests.helpers.cli import run_cli

TEXTS = [f"문서 {i}: 고양이가 소파에서 잔다.\n둘째 줄 {i}." for i in range(12)]


def records(path: Path, texts: list[str]) -> Path:
    path.write_text(
        "".join(
            json.dumps({"id": f"d{i}", "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(texts)
        )
    )
    return path


@pytest.fixture
def collection(tmp_path: Path, capsys, monkeypatch) -> Path:  # type: ignore[no-untyped-def]
    folder = tmp_path / "c"
    code, _, err = run_cli(["index", "create", str(folder)], capsys, monkeypatch)
    assert code == 0, err
    return folder


def test_a_rerun_resumes_and_a_changed_document_is_refused(
    collection: Path, tmp_path: Path, capsys, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    data = records(tmp_path / "docs.jsonl", TEXTS)
    assert run_cli(["index", "add", str(collection), str(data)], capsys, monkeypatch)[0] == 0
    code, out, err = run_cli(["index", "add", str(collection), str(data)], capsys, monkeypatch)
    assert code == 0, err
    assert "added 0" in out and "skipped 12" in out
    changed = records(tmp_path / "changed.jsonl", [*TEXTS[:11], "바뀐 문서"])
    code, _, err = run_cli(["index", "add", str(collection), str(changed)], capsys, monkeypatch)
    assert code == 2 and "'d11'" in err and "--upsert" in err and "--skip-existing" in err


def test_ctrl_c_says_what_is_stored_and_the_same_command_resumes(
    collection: Path, tmp_path: Path, capsys, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    data = records(tmp_path / "docs.jsonl", TEXTS)
    real = Collection._add_batch
    calls: list[int] = []

    def interrupted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Collection, "_add_batch", interrupted)
    code, _, err = run_cli(
        ["index", "add", str(collection), str(data), "--commit-every", "4"], capsys, monkeypatch
    )
    assert code == 130
    assert "stopped: 8 documents are stored" in err and "run the same command again to resume" in err
    monkeypatch.setattr(Collection, "_add_batch", real)
    code, out, err = run_cli(
        ["index", "add", str(collection), str(data), "--commit-every", "4"], capsys, monkeypatch
    )
    assert code == 0, err
    assert "added 4" in out and "skipped 8" in out and "12 documents" in out


def test_search_prints_one_line_per_hit_with_each_retrievers_score(
    collection: Path, tmp_path: Path, capsys, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    long = "고양이가 소파에서 잔다. " * 40
    data = records(tmp_path / "docs.jsonl", [long, *TEXTS[1:4]])
    assert run_cli(["index", "add", str(collection), str(data)], capsys, monkeypatch)[0] == 0
    code, out, err = run_cli(
        ["index", "search", str(collection), "-q", "고양이 소파", "--hybrid"], capsys, monkeypatch
    )
    assert code == 0, err
    hits = [line for line in out.splitlines() if line.strip()[:2].rstrip(".").isdigit()]
    assert len(hits) == 4
    assert all("(dense " in line and "lexical " in line and len(line) < 220 for line in hits)
    assert "BM25" in out and not any("fused" in line for line in hits)
    assert snippet("첫 줄\n둘째 줄  " + "가" * 300) == "첫 줄 둘째 줄 " + "가" * (SNIPPET_CHARS - 10) + "…"
    code, out, err = run_cli(["index", "search", str(collection), "-q", "고양이 소파"], capsys, monkeypatch)
    assert code == 0 and "cosine similarity" in out


def test_creating_an_existing_collection_names_no_python_api(collection: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run_cli(["index", "create", str(collection)], capsys, monkeypatch)
    assert code == 2 and "already exists" in err and "Collection" not in err
