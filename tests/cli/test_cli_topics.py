"""`munjang keywords` and `munjang topics` as a user runs them: output, JSON lines, plots, and one
`error:` line for bad input."""

from __future__ import annotations

import io
import json
import sys

import pytest

from tests.applications.test_topics import THEMES
from tests.helpers.cli import run_cli

DOC = "서울대학교에서 자연어처리 연구를 하는 학생들이 새로운 모델을 만들었다."


def test_keywords_from_arguments(capsys, monkeypatch) -> None:
    code, out, _ = run_cli(["keywords", DOC, "--top-n", "3"], capsys, monkeypatch)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"[0] {DOC}"
    assert len(lines) == 4
    assert all("에서" not in line for line in lines[1:])


def test_keywords_json_from_stdin(capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{DOC}\n\nThe cat sat on the warm mat.\n"))
    code, out, _ = run_cli(["keywords", "--json", "--method", "mmr", "--ngram", "1"], capsys, monkeypatch)
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["doc"] for r in rows] == [0, 1]  # the blank line is no document
    assert all(" " not in k["keyword"] for r in rows for k in r["keywords"])
    scores = [k["score"] for k in rows[1]["keywords"]]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["keywords", "x", "--method", "tfidf"], "unknown --method"),
        (["keywords", "x", "--ngram", "2-1"], "--ngram"),
        (["keywords", "x", "--ngram", "a"], "--ngram"),
        (["keywords", "x", "--method", "maxsum", "--top-n", "9", "--nr-candidates", "3"], "--nr-candidates"),
    ],
)
def test_keywords_bad_options(args: list[str], message: str, capsys, monkeypatch) -> None:
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code == 2
    assert err.startswith("error:") and message in err
    assert "Traceback" not in err and out == ""


def test_keywords_empty_file(tmp_path, capsys, monkeypatch) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    code, _, err = run_cli(["keywords", "--file", str(empty)], capsys, monkeypatch)
    assert code == 2 and "no documents" in err
    code, _, err = run_cli(["keywords", "x", "--file", str(empty)], capsys, monkeypatch)
    assert code == 2 and "not both" in err


@pytest.fixture
def sentences(tmp_path):
    path = tmp_path / "sentences.txt"
    lines = [s for group in THEMES.values() for s in group] * 4
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_topics_json_and_plot(sentences, tmp_path, capsys, monkeypatch) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / "topics.png"
    args = ["topics", str(sentences), "--min-topic-size", "4", "--reduction", "pca", "--json"]
    args += ["--plot", str(plot)]
    code, out, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert sum(r["size"] for r in rows) == 48
    assert sorted(i for r in rows for i in r["rows"]) == list(range(48))
    assert all(r["label"].startswith(f"{r['topic']}_") for r in rows)
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_topics_text(sentences, capsys, monkeypatch) -> None:
    args = ["topics", str(sentences), "--min-topic-size", "4", "--reduction", "none"]
    code, out, _ = run_cli(args, capsys, monkeypatch)
    assert code == 0
    assert "topics over" in out.splitlines()[0]
    assert "words:" in out


def test_topics_errors(sentences, tmp_path, capsys, monkeypatch) -> None:
    code, _, err = run_cli(["topics", str(sentences), "--reduction", "tsne"], capsys, monkeypatch)
    assert code == 2 and "unknown --reduction" in err
    code, _, err = run_cli(["topics", str(sentences), "--min-topic-size", "100"], capsys, monkeypatch)
    assert code == 2 and "fewer than --min-topic-size" in err
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, err = run_cli(["topics", str(sentences), "--plot", str(tmp_path / "p.png")], capsys, monkeypatch)
    assert code == 2 and "munjang[plots]" in err and "Traceback" not in err
