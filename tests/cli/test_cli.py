"""The `munjang` command line, through its real entry point (`munjang.cli.main`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from munjang import SentenceEncoder
from tests.helpers.cli import run_cli

run = run_cli


LINES = ["첫 번째 문장입니다.", "The second sentence.", "", "세 번째"]


def test_encode_txt_to_npy_and_jsonl(tmp_path, encoder: SentenceEncoder, capsys, monkeypatch) -> None:
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    code, out, _ = run(["encode", str(src)], capsys, monkeypatch)
    assert code == 0 and "4 x 384" in out
    np.testing.assert_allclose(np.load(tmp_path / "in.npy"), encoder.encode(LINES), atol=1e-6)
    code, out, _ = run(
        ["encode", str(src), "-o", str(tmp_path / "out.jsonl"), "--truncate-dim", "8"], capsys, monkeypatch
    )
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["text"] for r in rows] == LINES and all(len(r["embedding"]) == 8 for r in rows)


def test_encode_csv_column_and_jsonl_field(tmp_path, encoder: SentenceEncoder, capsys, monkeypatch) -> None:
    (tmp_path / "in.csv").write_text('id,body\n1,"Hello, world"\n2,안녕\n', encoding="utf-8")
    code, _, err = run(["encode", str(tmp_path / "in.csv"), "--field", "body"], capsys, monkeypatch)
    assert code == 0, err
    np.testing.assert_allclose(
        np.load(tmp_path / "in.npy"), encoder.encode(["Hello, world", "안녕"]), atol=1e-6
    )
    (tmp_path / "in.jsonl").write_text('{"text": "a"}\n{"text": "b"}\n', encoding="utf-8")
    assert (
        run(["encode", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "j.npy")], capsys, monkeypatch)[0]
        == 0
    )
    assert np.load(tmp_path / "j.npy").shape == (2, 384)


def test_encode_never_clobbers_and_reports_bad_lines(tmp_path, capsys, monkeypatch) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "ok"}\n{"text": 3}\n', encoding="utf-8")
    code, _, err = run(["encode", str(src)], capsys, monkeypatch)
    assert code == 2 and err.strip() == f"error: {src} line 2: 'text' is int, not text"
    existing = tmp_path / "keep.npy"
    existing.write_bytes(b"precious")
    src.write_text('{"text": "ok"}\n', encoding="utf-8")
    code, _, err = run(["encode", str(src), "-o", str(existing)], capsys, monkeypatch)
    assert code == 2 and "exists; pass --force" in err
    assert existing.read_bytes() == b"precious"
    code, _, err = run(["encode", str(tmp_path / "missing.txt")], capsys, monkeypatch)
    assert code == 2 and "missing.txt: no such file" in err


def test_similarity_prints_the_matrix(capsys, monkeypatch) -> None:
    code, out, _ = run(["similarity", "A man is eating food.", "A man eats.", "고양이"], capsys, monkeypatch)
    assert code == 0 and out.startswith("cosine similarity")
    rows = [line for line in out.splitlines() if line.startswith("  [") and line.count(".") >= 3]
    matrix = np.array([[float(x) for x in line.split("]")[1].split()] for line in rows])
    assert matrix.shape == (3, 3) and np.allclose(np.diag(matrix), 1.0, atol=1e-4)
    assert matrix[0, 1] > matrix[0, 2]
    code, _, err = run(["similarity", "only one"], capsys, monkeypatch)
    assert code == 2 and "at least two sentences" in err


def test_eval_sts_matches_the_evaluator(tmp_path, data_dir: Path, encoder, capsys, monkeypatch) -> None:
    from munjang.data import read_sts
    from munjang.evaluation import STSEvaluator

    small = tmp_path / "small.csv"
    small.write_text("".join((data_dir / "stsb" / "sts-test.csv").read_text().splitlines(True)[:120]))
    code, out, err = run(["eval", "sts", "--data", str(small), "--json"], capsys, monkeypatch)
    assert code == 0, err
    got = json.loads(out)
    expected = STSEvaluator.from_data(read_sts(small))(encoder)
    assert got["pairs"] == 120
    assert got["spearman_cosine"] == pytest.approx(expected["spearman_cosine"], abs=1e-6)
    code, out, _ = run(["eval", "sts", "--data", str(small)], capsys, monkeypatch)
    assert "primary: spearman_cosine" in out and "manhattan" in out


def test_info(capsys, monkeypatch, e5_path) -> None:
    code, out, _ = run(["info", "--json"], capsys, monkeypatch)
    details = json.loads(out)
    assert code == 0 and details["embedding_dimension"] == 384 and details["pooling"] == "mean"
    code, out, _ = run(["info", str(e5_path)], capsys, monkeypatch)
    assert code == 0 and "'query': 'query: '" in out and "XLMRobertaTokenizer" not in out


def test_model_errors_are_one_line(tmp_path, minilm_path, capsys, monkeypatch) -> None:
    code, _, err = run(["info", str(tmp_path / "nowhere")], capsys, monkeypatch)
    assert code == 2 and err == f"error: {tmp_path / 'nowhere'}: no such model folder\n"
    broken = tmp_path / "broken"
    shutil.copytree(minilm_path, broken)
    (broken / "model.safetensors").write_bytes(b"\x00" * 64)
    code, _, err = run(["similarity", "a", "b", "--model", str(broken)], capsys, monkeypatch)
    assert code == 2 and len(err.splitlines()) == 1 and "corrupt or truncated safetensors" in err
    assert "Traceback" not in err


def test_demo_without_data_says_so(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MUNJANG_DATA", str(tmp_path / "none"))
    code, out, _ = run(["demo"], capsys, monkeypatch)
    assert code == 0
    assert "1. Similarity matrix" in out and "2. Semantic search" in out
    assert "It will rain heavily in Seoul" in out.split("query: Will it rain in Seoul?")[1].splitlines()[1]
    assert "STSb score skipped" in out
