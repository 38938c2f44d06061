"""`munjang eval` / `info` with remote models: `--model remote:...` works as a local name does, several
`--model`s print one row each (remote rows with their requests and tokens), and a missing or wrong key
is one `error:` line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from munjang.data import read_sts
from munjang.evaluation import STSEvaluator
from tests.encoders.remote.conftest import MODEL
from tests.helpers.cli import run_cli as run


@pytest.fixture()
def small_sts(data_dir, tmp_path):
    small = tmp_path / "small.csv"
    small.write_text("".join((data_dir / "stsb" / "sts-test.csv").read_text().splitlines(True)[:40]))
    return small


@pytest.fixture()
def beir(tmp_path):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    docs = [
        "cats sleep on the sofa",
        "the bank raised rates",
        "rain is expected in Seoul",
        "a new phone was released",
    ]
    queries = ["sleeping cat", "interest rates", "weather in Seoul"]
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(docs))
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{i}", "text": t}) + "\n" for i, t in enumerate(queries))
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td1\t1\nq2\td2\t1\n"
    )
    return folder


def test_eval_sts_with_a_remote_model(server, encoder, small_sts, capsys, monkeypatch):
    name = f"remote:{server}#{MODEL}"
    code, out, err = run(
        ["eval", "sts", "--data", str(small_sts), "--model", name, "--json"], capsys, monkeypatch
    )
    assert code == 0, err
    got = json.loads(out)
    expected = STSEvaluator.from_data(read_sts(small_sts))(encoder)
    assert got["spearman_cosine"] == pytest.approx(expected["spearman_cosine"], abs=1e-6)
    assert got["usage"]["requests"] >= 1 and got["usage"]["input_tokens"] > 0
    code, out, _ = run(["eval", "sts", "--data", str(small_sts), "-m", name], capsys, monkeypatch)
    texts = got["usage"]["cache_misses"]  # every distinct sentence, asked for once
    assert code == 0 and f"remote: 0 requests (0 retries), {texts} cache hits" in out


def test_eval_puts_local_and_remote_models_side_by_side(
    server, minilm_path, small_sts, beir, capsys, monkeypatch
):
    name = f"remote:{server}#{MODEL}"
    code, out, err = run(
        ["eval", "sts", "--data", str(small_sts), "-m", str(minilm_path), "-m", name], capsys, monkeypatch
    )
    assert code == 0, err
    header, local, remote = out.splitlines()[1:]
    assert header.split()[:3] == ["model", "Spearman", "Pearson"]
    assert local.split()[1:3] == remote.split()[1:3], "the same model, local and remote, scores alike"
    assert local.split()[-4:] == ["-"] * 4 and int(remote.split()[-4]) >= 1
    code, out, err = run(
        ["eval", "retrieval", "--data", str(beir), "-m", str(minilm_path), "-m", name, "--json"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    rows = json.loads(out)["models"]
    assert [r["model"] for r in rows] == [str(minilm_path), name]
    assert rows[0]["cosine_ndcg@10"] == pytest.approx(rows[1]["cosine_ndcg@10"], abs=1e-6)
    assert "usage" in rows[1] and "usage" not in rows[0]


def test_info_and_key_errors_are_one_line(server, small_sts, tmp_path, capsys, monkeypatch):
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("one sentence\nanother one\n")
    code, out, err = run(["info", f"remote:{server}#{MODEL}", "--json"], capsys, monkeypatch)
    assert code == 0, err
    assert json.loads(out)["embedding_dimension"] == 384
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, _, err = run(
        ["eval", "sts", "--data", str(small_sts), "-m", "openai:text-embedding-3-small"], capsys, monkeypatch
    )
    assert code == 2 and err.strip().splitlines() == [
        "error: openai:text-embedding-3-small needs an API key: set $OPENAI_API_KEY"
    ]
    monkeypatch.setenv("MUNJANG_REMOTE_API_KEY", "wrong")
    code, _, err = run(
        ["eval", "sts", "--data", str(small_sts), "-m", f"remote:{server}#{MODEL}"], capsys, monkeypatch
    )
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("error: POST ") and "401 Unauthorized" in err and "$MUNJANG_REMOTE_API_KEY" in err
    code, _, err = run(
        ["encode", str(sentences), "-m", f"remote:{server}#{MODEL}", "--backend", "onnx"], capsys, monkeypatch
    )
    assert code == 2 and "backend='onnx' does not apply to a remote model" in err


def test_encode_with_a_remote_model(server, encoder, tmp_path, capsys, monkeypatch):
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("서울의 날씨\nSeoul weather\n")
    out = tmp_path / "vectors.npy"
    code, _, err = run(
        ["encode", str(sentences), "-m", f"remote:{server}#{MODEL}", "-o", str(out)], capsys, monkeypatch
    )
    assert code == 0, err
    np.testing.assert_allclose(np.load(out), encoder.encode(["서울의 날씨", "Seoul weather"]), atol=1e-5)
