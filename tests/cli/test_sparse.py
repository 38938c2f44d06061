"""`munjang index create --sparse-model` and `munjang index search --mode sparse` from the shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from munjang import load_sparse_encoder
from tests.helpers.cli import run_cli
from tests.helpers.sparse import munjang_splade

DOCS = [
    {"id": "a", "text": "the cat sat on the mat"},
    {"id": "b", "text": "서울 에 비 가 온다"},
    {"id": "c", "text": "the sun is on the road"},
]


@pytest.mark.slow  # three model loads through the shell; the same paths run fast in tests/search
def test_a_collection_with_a_sparse_model(tmp_path: Path, capsys, monkeypatch) -> None:
    splade = munjang_splade(tmp_path / "splade", inference_free=True)
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    folder = str(tmp_path / "col")
    assert run_cli(["index", "create", folder, "--sparse-model", str(splade)], capsys, monkeypatch)[0] == 0
    assert run_cli(["index", "add", folder, str(docs)], capsys, monkeypatch)[0] == 0
    code, out, _ = run_cli(
        ["index", "search", folder, "-q", "cat mat", "--mode", "sparse", "--json"], capsys, monkeypatch
    )
    assert code == 0
    got = [(r["id"], r["score"]) for r in json.loads(out)["results"]]
    model = load_sparse_encoder(splade, device="cpu")
    scores = model.similarity(
        model.encode_query(["cat mat"]), model.encode_document([d["text"] for d in DOCS])
    )[0]
    want = sorted(((d["id"], float(s)) for d, s in zip(DOCS, scores, strict=True) if s), key=lambda x: -x[1])
    assert [i for i, _ in got] == [i for i, _ in want]
    code, _, err = run_cli(
        ["index", "create", str(tmp_path / "bad"), "--sparse-model", str(tmp_path / "nope")],
        capsys,
        monkeypatch,
    )
    assert code != 0 and err.startswith("error:") and "no such model folder" in err and "Traceback" not in err
    assert not (tmp_path / "bad").exists()
