"""`munjang index ...`, `mine-paraphrases`, `cluster`, `dedup` and `eval retrieval` from the shell."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from munjang.data import save_beir, sts_retrieval_set
from tests.helpers.cli import run_cli
from tests.helpers.collection_backends import Backend, qdrant_url

DOCS = [
    {"id": "a", "text": "서울은 대한민국의 수도이다.", "lang": "ko", "year": 2020},
    {"id": "b", "text": "주식 시장이 오늘 크게 하락했다.", "lang": "ko", "year": 2022},
    {"id": "c", "text": "A man is playing the guitar.", "lang": "en", "year": 2019},
    {"id": "d", "text": "The stock market fell sharply today.", "lang": "en", "year": 2021},
]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(params=["embedded", "postgres", "qdrant"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """The collection argument: a folder, or a name and `--backend URL` (PostgreSQL + pgvector, or
    Qdrant's local mode)."""
    if request.param == "embedded":
        return [str(tmp_path / "col")]
    if request.param == "qdrant":
        return ["col", "--backend", qdrant_url(tmp_path)]
    url = request.getfixturevalue("postgres_url")
    return [str(Backend("postgres", tmp_path, url).location("col")), "--backend", url]


def test_index_lifecycle(where: list[str], tmp_path: Path, capsys, monkeypatch) -> None:
    docs = _jsonl(tmp_path / "docs.jsonl", DOCS)
    code, out, _ = run_cli(["index", "create", *where, "--index", "hnsw"], capsys, monkeypatch)
    assert code == 0 and "384-d" in out and "hnsw" in out
    code, out, _ = run_cli(["index", "add", *where, str(docs)], capsys, monkeypatch)
    assert code == 0 and "added 4" in out and "encoded 4" in out
    code, out, err = run_cli(["index", "add", *where, str(docs)], capsys, monkeypatch)
    assert code == 0 and "added 0" in out and "skipped 4" in out, err  # unchanged: a rerun resumes
    code, out, _ = run_cli(["index", "add", *where, str(docs), "--skip-existing"], capsys, monkeypatch)
    assert code == 0 and "skipped 4" in out
    code, out, _ = run_cli(
        [
            "index",
            "search",
            *where,
            "-q",
            "주가 하락",
            "-k",
            "2",
            "--hybrid",
            "--fusion",
            "rrf",
            "--filter",
            "lang=ko",
            "--json",
        ],
        capsys,
        monkeypatch,
    )
    assert code == 0
    result = json.loads(out)
    assert result["results"][0]["id"] == "b"
    assert {r["metadata"]["lang"] for r in result["results"]} == {"ko"}
    assert {"dense", "lexical", "fused"} <= set(result["results"][0]["scores"])
    code, out, _ = run_cli(
        ["index", "search", *where, "-q", "guitar", "--filter", '{"year": {"$lt": 2020}}'],
        capsys,
        monkeypatch,
    )
    assert code == 0 and "[c]" in out and "[a]" not in out
    code, out, _ = run_cli(["index", "delete", *where, "c", "zzz"], capsys, monkeypatch)
    assert code == 0 and "deleted 1 (1 ids were not in the collection); 3 documents left" in out
    code, out, _ = run_cli(["index", "info", *where, "--check", "--json"], capsys, monkeypatch)
    info = json.loads(out)
    assert code == 0 and info["documents"] == 3 and info["problems"] == [] and info["index"] == "hnsw"


def test_index_errors_are_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    code, _, err = run_cli(["index", "search", str(tmp_path / "none"), "-q", "x"], capsys, monkeypatch)
    assert code == 2 and "no such collection folder" in err
    nowhere = f"postgresql://munjang:secret@/nodb?host={tmp_path}/no-socket"
    code, _, err = run_cli(["index", "info", "col", "--backend", nowhere], capsys, monkeypatch)
    assert code == 2 and "cannot connect to" in err and "secret" not in err
    code, _, err = run_cli(["index", "info", "col", "--backend", "mysql://x"], capsys, monkeypatch)
    assert code == 2 and "postgresql:// or" in err and "URL; got" in err
    folder = str(tmp_path / "col")
    assert run_cli(["index", "create", folder], capsys, monkeypatch)[0] == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"text": \n', encoding="utf-8")
    code, _, err = run_cli(["index", "add", folder, str(bad)], capsys, monkeypatch)
    assert code == 2 and "line 2" in err and "not valid JSON" in err
    code, _, err = run_cli(["index", "search", folder, "-q", "x", "--filter", "novalue"], capsys, monkeypatch)
    assert code == 2 and "expected key=value" in err
    code, _, err = run_cli(["index", "search", folder, "-q", "x", "--weights", "a,b"], capsys, monkeypatch)
    assert code == 2 and "--weights" in err
    txt = tmp_path / "lines.txt"
    txt.write_text("first line\nsecond line\n", encoding="utf-8")
    code, out, _ = run_cli(["index", "add", folder, str(txt)], capsys, monkeypatch)
    assert code == 0 and "added 2" in out
    code, out, _ = run_cli(["index", "search", folder, "-q", "second", "-k", "1"], capsys, monkeypatch)
    assert "[lines.txt:2] second line" in out


def test_mine_cluster_dedup(tmp_path: Path, capsys, monkeypatch) -> None:
    sentences = tmp_path / "s.txt"
    sentences.write_text(
        "A man is playing a guitar.\nA man plays the guitar.\nThe stock market fell.\n"
        "Stocks dropped sharply.\nA cat sleeps on the sofa.\n",
        encoding="utf-8",
    )
    code, out, _ = run_cli(
        ["mine-paraphrases", str(sentences), "--json", "--top-k", "4"], capsys, monkeypatch
    )
    pairs = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and (pairs[0]["i"], pairs[0]["j"]) == (0, 1) and len(pairs) == 10
    assert [p["score"] for p in pairs] == sorted((p["score"] for p in pairs), reverse=True)
    code, out, _ = run_cli(
        ["cluster", str(sentences), "--threshold", "0.6", "--min-size", "2", "--json"], capsys, monkeypatch
    )
    clusters = [sorted(json.loads(line)["rows"]) for line in out.splitlines()]
    assert code == 0 and sorted(clusters) == [[0, 1], [2, 3]]
    code, out, _ = run_cli(["cluster", str(sentences), "--method", "kmeans"], capsys, monkeypatch)
    assert code == 2
    code, out, err = run_cli(["dedup", str(sentences), "--threshold", "0.9"], capsys, monkeypatch)
    assert code == 0 and "A man plays the guitar." not in out and "kept 4 of 5" in err


def test_eval_retrieval(tmp_path: Path, data_dir: Path, capsys, monkeypatch) -> None:
    data = sts_retrieval_set(data_dir / "stsb" / "sts-dev.csv")
    save_beir(data, tmp_path / "beir", "test")
    code, out, _ = run_cli(
        ["eval", "retrieval", "--data", str(tmp_path / "beir"), "--json"], capsys, monkeypatch
    )
    metrics = json.loads(out[out.index("{") :])
    assert code == 0 and metrics["evaluated_queries"] == 262
    assert 0.9 < metrics["cosine_ndcg@10"] <= 1.0


def test_index_create_passage_settings(tmp_path: Path, capsys, monkeypatch) -> None:
    from munjang.search.collection.collection import Collection

    plain, alone = str(tmp_path / "plain"), str(tmp_path / "alone")
    assert run_cli(["index", "create", plain], capsys, monkeypatch)[0] == 0
    options = ["--chunk-tokens", "64", "--lexical-context", "passage"]
    assert run_cli(["index", "create", alone, *options], capsys, monkeypatch)[0] == 0
    with Collection.open(plain) as col:
        assert col.chunking.max_tokens == 128 and col.chunking.lexical_context == "window"
    with Collection.open(alone) as col:
        assert col.chunking.max_tokens == 64 and col.chunking.lexical_context == "passage"
    bad = ["index", "create", str(tmp_path / "bad"), "--lexical-context", "page"]
    code, _, err = run_cli(bad, capsys, monkeypatch)
    assert code == 2 and err.count("\n") == 1 and "lexical_context must be one of window, passage" in err


def test_index_with_the_mecab_tokenizer(tmp_path: Path, capsys, monkeypatch) -> None:
    pytest.importorskip("mecab", reason="python-mecab-ko comes with munjang[mecab] (make install-dev)")
    from munjang.search.index import tokenizers

    folder = str(tmp_path / "col")
    assert run_cli(["index", "create", folder, "--tokenizer", "auto-mecab"], capsys, monkeypatch)[0] == 0
    txt = tmp_path / "lines.txt"
    txt.write_text("도서관은 조용한 공부 장소입니다\n서울의 지하철은 편리합니다\n", encoding="utf-8")
    assert run_cli(["index", "add", folder, str(txt)], capsys, monkeypatch)[0] == 0
    query = ["index", "search", folder, "-q", "도서관에서 공부하기", "-k", "1", "--mode", "lexical"]
    code, out, _ = run_cli(query, capsys, monkeypatch)
    assert code == 0 and "[lines.txt:1] 도서관은" in out
    monkeypatch.setitem(sys.modules, "mecab", None)  # as if python-mecab-ko were not installed
    monkeypatch.setattr(tokenizers, "_mecab_cache", {})
    code, _, err = run_cli(query, capsys, monkeypatch)
    assert code == 2 and err.count("\n") == 1 and "pip install 'munjang[mecab]'" in err
