"""CachedMultipleNegativesRankingLoss: the loss and every gradient of MultipleNegativesRankingLoss at
the same batch (dropout off, and on: the replayed forward must draw the masks of the first), the
same as sentence-transformers' CachedMultipleNegativesRankingLoss, and it trains through munjang's
Trainer like MNRL does (gradient accumulation included).

Float64 for the comparisons (see test_parity.py: in float32 summation order alone moves gradients
by about 1e-5).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import torch
from sentence_transformers import SentenceTransformer

import munjang
from munjang.losses import (
    LOSSES,
    CachedMultipleNegativesRankingLoss,
    MatryoshkaLoss,
    MultipleNegativesRankingLoss,
)
from munjang.losses.gradient_cache import minibatch_features, minibatch_ranges
from munjang.training import Example, Trainer, TrainingArguments
from tests.helpers.loss_parity import (
    ANCHORS,
    NEGATIVES,
    POSITIVES,
    TOLERANCE,
    assert_same_gradients,
    gradients,
    one_thread,
    st_features,
    st_losses,
    tiny_parity_bert,
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_parity_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def dropout_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_parity_bert(tmp_path_factory.mktemp("tiny-bert-dropout"), dropout=0.2)


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_thread():
        yield


def _encoder(folder: Path) -> munjang.SentenceEncoder:
    return munjang.load_encoder(folder, device="cpu").double()


def _run(loss: torch.nn.Module, model: munjang.SentenceEncoder, columns: list[list[str]]) -> float:
    value = loss([model.tokenize(c) for c in columns], None)
    value.backward()
    return float(value.item())


# name: columns, options, mini-batch size (6 rows: uneven last mini-batches, and one row each)
CASES: dict[str, tuple[list[list[str]], dict[str, Any], int]] = {
    "pairs": ([ANCHORS, POSITIVES], {}, 4),
    "hard negatives": ([ANCHORS, POSITIVES, NEGATIVES], {}, 1),
    "symmetric": ([ANCHORS, POSITIVES, NEGATIVES], {"symmetric": True}, 5),
    "dot": ([ANCHORS, POSITIVES], {"similarity_fct": "dot", "scale": 1.0}, 4),
}


@pytest.mark.parametrize("case", CASES)
def test_equals_mnrl_at_the_same_batch(folder: Path, case: str) -> None:
    columns, options, mini_batch_size = CASES[case]
    plain, cached = _encoder(folder), _encoder(folder)
    expected = _run(MultipleNegativesRankingLoss(plain, **options), plain, columns)
    got = _run(
        CachedMultipleNegativesRankingLoss(cached, mini_batch_size=mini_batch_size, **options),
        cached,
        columns,
    )
    assert got == pytest.approx(expected, abs=TOLERANCE)
    assert_same_gradients(gradients(cached), gradients(plain))


def test_with_dropout_the_replay_draws_the_same_masks(dropout_folder: Path) -> None:
    """Dropout on: the gradients are those of the very embeddings the loss was computed on.

    The reference embeds the same mini-batches, in the same order from the same seed, with a graph,
    and back-propagates MNRL through them directly; without the random-state replay the cached
    loss's second forward would draw other masks and its gradients would differ.
    """
    columns = [ANCHORS, POSITIVES, NEGATIVES]
    reference = _encoder(dropout_folder).train()
    features = [reference.tokenize(c) for c in columns]
    torch.manual_seed(11)
    embeddings = [
        torch.cat(
            [reference(minibatch_features(f, b, e))["sentence_embedding"] for b, e in minibatch_ranges(6, 4)]
        )
        for f in features
    ]
    expected = MultipleNegativesRankingLoss(reference).compute_from_embeddings(embeddings, None)
    expected.backward()

    cached = _encoder(dropout_folder).train()
    torch.manual_seed(11)
    got = _run(CachedMultipleNegativesRankingLoss(cached, mini_batch_size=4), cached, columns)
    assert got == pytest.approx(expected.item(), abs=TOLERANCE)
    assert_same_gradients(gradients(cached), gradients(reference))

    torch.manual_seed(12)  # the dropout is real: another seed, another loss
    with torch.no_grad():
        other = CachedMultipleNegativesRankingLoss(cached, mini_batch_size=4)(
            [cached.tokenize(c) for c in columns], None
        )
    assert abs(other.item() - got) > 1e-6


@pytest.mark.parametrize("case", CASES)
def test_parity_with_sentence_transformers(folder: Path, case: str) -> None:
    from sentence_transformers import util

    columns, options, mini_batch_size = CASES[case]
    ours = _encoder(folder).eval()
    ref = SentenceTransformer(str(folder), device="cpu").double().eval()
    st_options: dict[str, Any] = {"mini_batch_size": mini_batch_size}
    if options.get("similarity_fct") == "dot":
        st_options.update(similarity_fct=util.dot_score, scale=1.0)
    if options.get("symmetric"):
        st_options.update(directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction")
    ref_value = st_losses.CachedMultipleNegativesRankingLoss(ref, **st_options)(
        [st_features(ref, c) for c in columns], None
    )
    ref_value.backward()
    got = _run(
        CachedMultipleNegativesRankingLoss(ours, mini_batch_size=mini_batch_size, **options), ours, columns
    )
    assert got == pytest.approx(ref_value.item(), abs=TOLERANCE)
    assert_same_gradients(gradients(ours[0].auto_model), gradients(ref[0].auto_model))


def test_without_gradients_gives_the_loss_only(folder: Path) -> None:
    model = _encoder(folder)
    features = [model.tokenize(c) for c in (ANCHORS, POSITIVES)]
    with torch.no_grad():
        value = CachedMultipleNegativesRankingLoss(model, mini_batch_size=2)(features, None)
        expected = MultipleNegativesRankingLoss(model)(features, None)
    assert not value.requires_grad
    assert value.item() == pytest.approx(expected.item(), abs=TOLERANCE)


def _pairs(n: int) -> list[Example]:
    return [Example((ANCHORS[i % 6] + f" {i}", POSITIVES[i % 6] + f" {i}")) for i in range(n)]


def _train(folder: Path, tmp: Path, make_loss: Callable[[Any], torch.nn.Module], **kw: Any) -> Any:
    model = _encoder(folder)  # float64: AdamW's first steps magnify float32 rounding differences
    losses: list[float] = []
    args = TrainingArguments(output_dir=str(tmp), epochs=1, batch_size=8, learning_rate=1e-3, seed=3,
                             show_progress_bar=False, save_checkpoints=False, **kw)  # fmt: skip
    Trainer(model, make_loss(model), _pairs(32), args=args, on_step=lambda _, v: losses.append(v)).train()
    return model, losses


@pytest.mark.parametrize("accumulation", [1, 2])
def test_trains_through_the_trainer_as_mnrl_does(folder: Path, tmp_path: Path, accumulation: int) -> None:
    plain, plain_losses = _train(
        folder, tmp_path / "plain", MultipleNegativesRankingLoss, gradient_accumulation_steps=accumulation
    )
    cached, cached_losses = _train(
        folder,
        tmp_path / "cached",
        lambda m: CachedMultipleNegativesRankingLoss(m, mini_batch_size=3),
        gradient_accumulation_steps=accumulation,
    )
    assert cached_losses == pytest.approx(plain_losses, abs=1e-6)
    batch = [cached.tokenize(c) for c in (ANCHORS, POSITIVES)]
    with torch.no_grad():
        before = CachedMultipleNegativesRankingLoss(_encoder(folder))(batch, None)
        after = CachedMultipleNegativesRankingLoss(cached)(batch, None)
    assert after < before - 0.05
    for name, value in plain.state_dict().items():
        torch.testing.assert_close(cached.state_dict()[name], value, rtol=0, atol=1e-5, msg=name)


def test_registered_and_checked(folder: Path) -> None:
    assert LOSSES["cached_mnrl"] is CachedMultipleNegativesRankingLoss
    model = _encoder(folder)
    with pytest.raises(ValueError, match="mini_batch_size"):
        CachedMultipleNegativesRankingLoss(model, mini_batch_size=0)
    with pytest.raises(ValueError, match="columns"):
        CachedMultipleNegativesRankingLoss(model)([model.tokenize(ANCHORS)], None)
    with pytest.raises(ValueError, match="its own way"):
        MatryoshkaLoss(model, CachedMultipleNegativesRankingLoss(model), [16, 8])
    config = CachedMultipleNegativesRankingLoss(model, mini_batch_size=5).get_config_dict()
    assert config["mini_batch_size"] == 5 and config["scale"] == 20.0


def test_refuses_several_processes_and_static_models(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from munjang.losses import gradient_cache

    model = _encoder(folder)
    loss = CachedMultipleNegativesRankingLoss(model, mini_batch_size=2)
    features = [model.tokenize(c) for c in (ANCHORS, POSITIVES)]
    monkeypatch.setattr(gradient_cache, "rank_and_world", lambda: (0, 2))
    with pytest.raises(ValueError, match="one process"):
        loss(features, None)
    with torch.no_grad():  # evaluation replays nothing, so it may run anywhere
        assert loss(features, None).item() > 0
    with pytest.raises(ValueError, match="static model"):
        gradient_cache.check_model(cast(Any, SimpleNamespace(static=object())), "CachedX", 4)
