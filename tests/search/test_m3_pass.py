"""A bge-m3 collection: dense, sparse and ColBERT vectors stored from one forward pass per batch, and
the "m3" mode's score equal to M3Encoder.combined_scores (bge-m3's weighted sum) on the same pair."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from munjang.encoders.m3.encoder import DEFAULT_WEIGHTS, M3Output, combined_scores, load_m3_encoder
from munjang.search.collection.collection import Collection
from tests.helpers.m3 import tiny_m3

DOCS = {
    "a": "the cat sat on the mat",
    "b": "dogs and cats in the rain",
    "c": "서울과 부산에 비가 온다",
    "d": "사과 바나나 고양이 강아지",
    "e": "the sun is on the road",
}
QUERIES = ["cat on the mat", "서울 비"]


@pytest.fixture(scope="module")
def m3_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_m3(tmp_path_factory.mktemp("m3") / "model")


class Forwards:
    """Counts transformer forward passes of a model (a hook: what runs, not what was asked)."""

    def __init__(self, module) -> None:
        self.calls = 0
        module.register_forward_hook(lambda *_: self._count())

    def _count(self) -> None:
        self.calls += 1


@pytest.fixture(scope="module")
def col(tmp_path_factory: pytest.TempPathFactory, m3_folder: Path) -> Collection:
    c = Collection.create(tmp_path_factory.mktemp("col") / "col", m3_model=m3_folder, tokenizer="word")
    c.add(list(DOCS), list(DOCS.values()))
    yield c
    c.close()


def test_adding_encodes_each_batch_once_for_all_three(tmp_path: Path, m3_folder: Path) -> None:
    model = load_m3_encoder(m3_folder, device="cpu")
    forwards = Forwards(model.transformer)
    with Collection.create(tmp_path / "c", m3_model=m3_folder, m3_encoder=model, tokenizer="word") as c:
        c.add(list(DOCS), list(DOCS.values()), batch_size=32)
        assert forwards.calls == 1, "one batch: one pass gives dense, sparse and ColBERT"
        c.add(["f", "g", "h"], ["one more", "two more", "three more"], batch_size=2)
        assert forwards.calls == 1 + 2
        c.add(["a2"], [DOCS["a"]])  # every cache already holds this text
        assert forwards.calls == 3
        assert c.check() == []
        c.search("cat", mode="m3")
        assert forwards.calls == 4, "an m3 query is encoded once for its three retrievers"
        c.search("cat", mode="hybrid")
        assert forwards.calls == 5, "so is a hybrid one"
        info = c.info()
        assert (
            info["model"] == info["sparse"]["model"] == info["multi_vector"]["model"] == info["m3"]["model"]
        )
        assert info["m3"]["weights"] == list(DEFAULT_WEIGHTS)


def test_m3_score_equals_combined_scores_on_the_same_pair(col: Collection, m3_folder: Path) -> None:
    model = load_m3_encoder(m3_folder, device="cpu")
    for query in QUERIES:
        hits = col.search(query, k=len(DOCS), mode="m3")
        assert len(hits) == len(DOCS) and [h.score for h in hits] == sorted(
            (h.score for h in hits), reverse=True
        )
        q = model.encode([query])
        for hit in hits:
            d = model.encode([hit.text])
            assert d.colbert is not None
            as_stored = M3Output(d.dense, d.sparse, [d.colbert[0].astype(np.float16).astype(np.float32)])
            want = combined_scores(q, as_stored)
            assert hit.score == pytest.approx(float(want["combined"][0, 0]), abs=1e-5)
            assert hit.scores["dense"] == pytest.approx(float(want["dense"][0, 0]), abs=1e-5)
            assert hit.scores["sparse"] == pytest.approx(float(want["sparse"][0, 0]), abs=1e-5)
            assert hit.scores["multi_vector"] == pytest.approx(float(want["colbert"][0, 0]), abs=1e-5)
            exact = combined_scores(q, d)["combined"][0, 0]  # float16 ColBERT tokens cost little
            assert hit.score == pytest.approx(float(exact), abs=2e-3)


def test_m3_weights_and_the_single_modes(col: Collection, m3_folder: Path) -> None:
    query = QUERIES[0]
    dense = {h.id: h.score for h in col.search(query, k=5, mode="dense")}
    only_dense = col.search(query, k=5, mode="m3", weights=[1, 0, 0])
    assert [h.id for h in only_dense] == list(dense)
    assert [h.score for h in only_dense] == pytest.approx(list(dense.values()), abs=1e-5)
    mv = {h.id: h.score for h in col.search(query, k=5, mode="multi_vector")}
    only_colbert = {h.id: h.score for h in col.search(query, k=5, mode="m3", weights=[0, 0, 1])}
    assert only_colbert == pytest.approx(mv, abs=1e-6)  # MeanMaxSim, as bge-m3 scores ColBERT
    assert col.retrievers("hybrid") == ["dense", "lexical", "sparse", "multi_vector"]
    with pytest.raises(ValueError, match="three non-negative"):
        col.search(query, mode="m3", weights=[1, 1])


def test_reopen_loads_the_model_from_the_config(col: Collection, m3_folder: Path) -> None:
    want = [(h.id, h.score) for h in col.search(QUERIES[1], k=5, mode="m3")]
    with Collection.open(col.folder, readonly=True) as again:
        assert again.m3 is not None and again.m3._model is None  # loads on first need
        got = [(h.id, h.score) for h in again.search(QUERIES[1], k=5, mode="m3")]
        assert [i for i, _ in got] == [i for i, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)
        assert again.check() == []


def test_m3_errors_name_the_problem(tmp_path: Path, m3_folder: Path, encoder) -> None:
    with pytest.raises(ValueError, match="give no model or encoder"):
        Collection.create(tmp_path / "a", m3_model=m3_folder, encoder=encoder)
    with pytest.raises(ValueError, match="brings its own"):
        Collection.create(tmp_path / "b", m3_model=m3_folder, sparse_model=m3_folder)
    with pytest.raises(ValueError, match="late chunking needs a mean-pooling model"):
        Collection.create(tmp_path / "e", m3_model=m3_folder, chunking={"late": True})
    with pytest.raises(ValueError, match="m3_encoder needs m3_model"):
        Collection.create(tmp_path / "c", m3_encoder=load_m3_encoder(m3_folder, device="cpu"))
    with Collection.create(tmp_path / "d", encoder=encoder, tokenizer="word") as plain:
        plain.add(["x"], ["text"])
        with pytest.raises(ValueError, match="no bge-m3 model"):
            plain.search("text", mode="m3")
    assert not any((tmp_path / n).exists() for n in "abce")
