"""`munjang index create --multi-vector-model` / `--m3-model` and `munjang index search --mode
multi_vector` / `--mode m3` from the shell; a mode the collection lacks is one error line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from munjang.encoders.multi_vector import load_multi_vector_encoder, maxsim
from tests.helpers.cli import run_cli
from tests.helpers.m3 import tiny_m3
from tests.helpers.multi_vector import st_multi_vector

DOCS = [
    {"id": "a", "text": "the cat sat on the mat"},
    {"id": "b", "text": "서울에 비가 온다"},
    {"id": "c", "text": "the sun is on the road"},
]


@pytest.mark.slow  # four model loads through the shell; the same paths run fast in tests/search, tests/server
def test_collections_with_a_multi_vector_model_and_with_bge_m3(tmp_path: Path, capsys, monkeypatch) -> None:
    colbert = st_multi_vector(tmp_path / "colbert")
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    folder = str(tmp_path / "col")
    assert (
        run_cli(["index", "create", folder, "--multi-vector-model", str(colbert)], capsys, monkeypatch)[0]
        == 0
    )
    assert run_cli(["index", "add", folder, str(docs)], capsys, monkeypatch)[0] == 0
    code, out, _ = run_cli(
        ["index", "search", folder, "-q", "cat mat", "--mode", "multi_vector", "--json"], capsys, monkeypatch
    )
    assert code == 0
    got = [r["id"] for r in json.loads(out)["results"]]
    model = load_multi_vector_encoder(colbert, device="cpu")
    stored = [
        m.astype(np.float16).astype(np.float32) for m in model.encode_document([d["text"] for d in DOCS])
    ]
    scores = maxsim(model.encode_query(["cat mat"]), stored)[0]
    assert got == [DOCS[j]["id"] for j in np.argsort(-scores, kind="stable")]
    code, _, err = run_cli(["index", "search", folder, "-q", "cat", "--mode", "m3"], capsys, monkeypatch)
    assert code != 0 and err.startswith("error:") and "no bge-m3 model" in err and "Traceback" not in err

    m3 = str(tmp_path / "m3")
    assert (
        run_cli(
            ["index", "create", m3, "--m3-model", str(tiny_m3(tmp_path / "bge-m3"))], capsys, monkeypatch
        )[0]
        == 0
    )
    assert run_cli(["index", "add", m3, str(docs)], capsys, monkeypatch)[0] == 0
    code, out, _ = run_cli(
        ["index", "search", m3, "-q", "cat mat", "--mode", "m3", "--weights", "0.4,0.2,0.4", "--json"],
        capsys,
        monkeypatch,
    )
    assert code == 0
    results = json.loads(out)["results"]
    assert {r["id"] for r in results} == {"a", "b", "c"}
    assert {"dense", "sparse", "multi_vector", "m3"} <= set(results[0]["scores"])
    code, _, err = run_cli(
        ["index", "create", str(tmp_path / "bad"), "--m3-model", str(colbert)], capsys, monkeypatch
    )
    assert code != 0 and err.startswith("error:") and "not a bge-m3 model folder" in err
    assert not (tmp_path / "bad").exists()
