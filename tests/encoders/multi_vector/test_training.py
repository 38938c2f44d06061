"""The MaxSim in-batch negatives loss against sentence-transformers' MultiVectorMultipleNegativesRankingLoss,
and the compact training loop lowering it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from munjang.encoders.multi_vector import load_multi_vector_encoder
from munjang.encoders.multi_vector.fit import FitOptions, batches, fit_colbert
from munjang.encoders.multi_vector.loss import MaxSimRankingLoss
from tests.helpers.multi_vector import st_multi_vector

QUERIES = ["what is a cat?", "hello there", "고양이는 어떤 동물인가요?", "rain tomorrow?"]
DOCS = ["A cat, is an animal.", "Hello world!", "고양이는 포유류이다.", "It will rain."]
NEGATIVES = ["Stocks fell.", "Dogs bark.", "서울은 맑다.", "The sun is out."]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return st_multi_vector(Path(tmp_path_factory.mktemp("mv")) / "colbert")


def test_loss_matches_sentence_transformers(folder: Path) -> None:
    from sentence_transformers import MultiVectorEncoder
    from sentence_transformers.multi_vector_encoder.losses import MultiVectorMultipleNegativesRankingLoss

    ref = MultiVectorEncoder(str(folder), device="cpu")
    features = [
        {**ref.preprocess(QUERIES, prompt="[Q] ", task="query"), "task": "query"},
        {**ref.preprocess(DOCS, prompt="[D] ", task="document"), "task": "document"},
        {**ref.preprocess(NEGATIVES, prompt="[D] ", task="document"), "task": "document"},
    ]
    expected = MultiVectorMultipleNegativesRankingLoss(ref, scale=2.0)(features)
    ours = MaxSimRankingLoss(load_multi_vector_encoder(folder, device="cpu"), scale=2.0)
    value = ours([QUERIES, DOCS, NEGATIVES]).detach()
    assert float(value) == pytest.approx(float(expected.detach()), abs=1e-5)


def test_fit_lowers_the_loss(folder: Path) -> None:
    model = load_multi_vector_encoder(folder, device="cpu")
    pairs = list(zip(QUERIES * 2, DOCS + NEGATIVES, strict=True))
    loss = MaxSimRankingLoss(model)
    with torch.no_grad():
        before = float(loss([QUERIES, DOCS]))
    losses = fit_colbert(
        model, pairs, FitOptions(batch_size=4, steps=12, lr=1e-3, projection_lr=1e-2, warmup=2)
    )
    assert len(losses) == 12 and not model.training
    with torch.no_grad():
        assert float(loss([QUERIES, DOCS])) < before


def test_batches_never_repeat_a_document() -> None:
    pairs = [("q1", "d"), ("q2", "d"), ("q3", "e"), ("q4", "f"), ("q5", "g")]
    for batch in batches(pairs, 2, seed=0):
        assert len({doc for _, doc in batch}) == len(batch) == 2


def test_batches_keep_hard_negatives_apart_from_other_rows_documents() -> None:
    triplets = [("q1", "a", "b"), ("q2", "b", "c"), ("q3", "c", "d"), ("q4", "e", "e"), ("q5", "f", "g")]
    for seed in range(5):
        for batch in batches(triplets, 2, seed=seed):
            documents = [doc for row in batch for doc in row[1:]]
            assert len(set(documents)) == len(documents) == 4
