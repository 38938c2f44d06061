"""`munjang encode --instruction` and `munjang rerank --instruction` with decoder models: the same
numbers as the Python API."""

from __future__ import annotations

import json

import numpy as np
import pytest

from munjang import load_cross_encoder, load_encoder
from tests.helpers.cli import run_cli
from tests.helpers.llm import tiny_decoder_embedder, tiny_llm_reranker

DOCS = ["한 남자가 기타를 친다.", "아이들이 공원에서 뛰어논다.", "서울은 한국의 수도이다."]
INSTRUCT = "Instruct: Given a web search query, retrieve relevant passages\nQuery: "


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("llm-cli")
    return tiny_decoder_embedder(root / "emb"), tiny_llm_reranker(root / "rr")


def test_encode_with_an_instruction(folders, tmp_path, capsys, monkeypatch):
    emb, _ = folders
    (tmp_path / "in.txt").write_text("\n".join(DOCS), encoding="utf-8")
    out = tmp_path / "v.npy"
    code, _, err = run_cli(["encode", str(tmp_path / "in.txt"), "-m", str(emb), "--instruction", INSTRUCT,
                            "-o", str(out), "--device", "cpu"], capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    expected = load_encoder(emb, device="cpu").encode(DOCS, prompt=INSTRUCT)
    np.testing.assert_allclose(np.load(out), expected, atol=1e-5)


def test_rerank_with_an_instruction(folders, tmp_path, capsys, monkeypatch):
    _, rr = folders
    (tmp_path / "docs.txt").write_text("\n".join(DOCS), encoding="utf-8")
    task = "Judge whether the document answers the query."
    code, out, err = run_cli(["rerank", str(tmp_path / "docs.txt"), "-q", "기타", "-m", str(rr), "--json",
                              "--instruction", task, "--device", "cpu"], capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    hits = json.loads(out.splitlines()[0])["results"]
    expected = load_cross_encoder(rr, device="cpu").rank("기타", DOCS, prompt=task)
    assert [h["corpus_id"] for h in hits] == [h["corpus_id"] for h in expected]
    np.testing.assert_allclose([h["score"] for h in hits], [h["score"] for h in expected], atol=1e-6)
