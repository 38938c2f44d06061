"""Parity of munjang's losses with sentence-transformers' (the reference, a test-only dependency).

A tiny random BERT (2 layers, 32 dims, dropout off) is saved once and loaded by both libraries,
each with mean pooling. For each loss, the same batch (Korean and English texts of different
lengths) goes through both; the loss values and the gradient of every transformer parameter must
agree within 1e-5.

The comparison runs in float64: a gradient such as the token-type embedding's is a sum over every
token of the batch, and in float32 two correct implementations that round in a different order
already differ by about 1e-5 there. In float64 the rounding noise is far below the tolerance,
so any difference that shows is a difference in the formula.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
from sentence_transformers import SentenceTransformer

import munjang
from munjang.losses import (
    AnglELoss,
    ContrastiveLoss,
    CoSENTLoss,
    CosineSimilarityLoss,
    MatryoshkaLoss,
    MSELoss,
    MultipleNegativesRankingLoss,
    OnlineContrastiveLoss,
    SoftmaxLoss,
    TripletLoss,
)
from tests.helpers.loss_parity import (
    ANCHORS,
    NEGATIVES,
    POSITIVES,
    TOLERANCE,
    assert_same_gradients,
    column_merging_disabled,
    gradients,
    st_losses,
    tiny_parity_bert,
)
from tests.helpers.loss_parity import st_features as _st_features


@pytest.fixture(scope="module")
def tiny_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A seeded 2-layer, 32-dim BERT with the embedded model's tokenizer, dropout off."""
    return tiny_parity_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture
def models(tiny_model_path: Path) -> tuple[munjang.SentenceEncoder, SentenceTransformer]:
    """Fresh float64 copies (no gradients yet) of the same weights in both libraries."""
    ours = munjang.load_encoder(tiny_model_path, device="cpu").double()
    ref = SentenceTransformer(str(tiny_model_path), device="cpu").double()
    ours.eval()
    ref.eval()
    return ours, ref


def _compare(
    models: tuple[munjang.SentenceEncoder, SentenceTransformer],
    ours_loss: torch.nn.Module,
    ref_loss: torch.nn.Module,
    columns: Sequence[Sequence[str]],
    labels: torch.Tensor | None,
) -> None:
    """Run both losses on the same batch, backpropagate, compare values and all gradients."""
    ours, ref = models
    ours_loss.double()
    ref_loss.double()
    ours_value = ours_loss([ours.tokenize(c) for c in columns], labels)
    with column_merging_disabled():  # one forward per column in both, as munjang does
        ref_value = ref_loss([_st_features(ref, c) for c in columns], labels)
    assert ours_value.dim() == 0
    assert abs(ours_value.item() - ref_value.item()) <= TOLERANCE, (ours_value.item(), ref_value.item())
    assert ours_value.item() != 0.0 or ref_value.item() == 0.0
    ours_value.backward()
    ref_value.backward()

    assert_same_gradients(gradients(ours[0].auto_model), gradients(ref[0].auto_model))


def _pair_labels() -> torch.Tensor:
    return torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])


def test_cosine_similarity_loss(models: Any) -> None:
    labels = torch.tensor([0.9, 0.1, 0.75, 0.4, 0.6, 0.0])  # KorSTS 0-5 scores divided by 5
    _compare(
        models,
        CosineSimilarityLoss(models[0]),
        st_losses.CosineSimilarityLoss(models[1]),
        [ANCHORS, POSITIVES],
        labels,
    )


@pytest.mark.parametrize("multiplication", [False, True])
def test_softmax_loss(models: Any, multiplication: bool) -> None:
    ours_model, ref_model = models
    ref_loss = st_losses.SoftmaxLoss(
        ref_model, 32, num_labels=3, concatenation_sent_multiplication=multiplication
    )
    ours_loss = SoftmaxLoss(ours_model, num_labels=3, concatenation_sentence_multiplication=multiplication)
    ours_loss.classifier.load_state_dict(ref_loss.classifier.state_dict())
    labels = torch.tensor([0, 1, 2, 0, 2, 1])
    _compare(models, ours_loss, ref_loss, [ANCHORS, POSITIVES], labels)
    ours_grad, ref_grad = ours_loss.classifier.weight.grad, ref_loss.classifier.weight.grad
    assert ours_grad is not None and ref_grad is not None
    assert (ours_grad - ref_grad).abs().max().item() <= TOLERANCE


@pytest.mark.parametrize(
    ("metric", "ref_metric", "margin"),
    [
        ("euclidean", "EUCLIDEAN", 1.0),
        ("cosine", "COSINE", 0.5),
        ("manhattan", "MANHATTAN", 5.0),
    ],
)
def test_triplet_loss(models: Any, metric: str, ref_metric: str, margin: float) -> None:
    ref_loss = st_losses.TripletLoss(
        models[1], distance_metric=getattr(st_losses.TripletDistanceMetric, ref_metric), triplet_margin=margin
    )
    ours_loss = TripletLoss(models[0], distance_metric=metric, triplet_margin=margin)
    _compare(models, ours_loss, ref_loss, [ANCHORS, POSITIVES, NEGATIVES], None)


@pytest.mark.parametrize("size_average", [True, False])
def test_contrastive_loss(models: Any, size_average: bool) -> None:
    ref_loss = st_losses.ContrastiveLoss(models[1], margin=0.5, size_average=size_average)
    ours_loss = ContrastiveLoss(models[0], margin=0.5, size_average=size_average)
    _compare(models, ours_loss, ref_loss, [ANCHORS, NEGATIVES], _pair_labels())


def test_online_contrastive_loss(models: Any) -> None:
    ref_loss = st_losses.OnlineContrastiveLoss(models[1], margin=0.5)
    ours_loss = OnlineContrastiveLoss(models[0], margin=0.5)
    _compare(models, ours_loss, ref_loss, [ANCHORS, NEGATIVES], _pair_labels())


def test_cosent_loss(models: Any) -> None:
    labels = torch.tensor([4.5, 0.5, 3.8, 2.0, 3.0, 0.5])  # raw 0-5 scores, one tie
    _compare(models, CoSENTLoss(models[0]), st_losses.CoSENTLoss(models[1]), [ANCHORS, POSITIVES], labels)


def test_angle_loss(models: Any) -> None:
    labels = torch.tensor([4.5, 0.5, 3.8, 2.0, 3.0, 0.5])
    _compare(models, AnglELoss(models[0]), st_losses.AnglELoss(models[1]), [ANCHORS, POSITIVES], labels)


@pytest.mark.parametrize("with_negatives", [False, True])
@pytest.mark.parametrize("similarity", ["cosine", "dot"])
def test_multiple_negatives_ranking_loss(models: Any, with_negatives: bool, similarity: str) -> None:
    from sentence_transformers import util

    ref_fct: Callable[..., torch.Tensor] = util.cos_sim if similarity == "cosine" else util.dot_score
    scale = 20.0 if similarity == "cosine" else 1.0
    ref_loss = st_losses.MultipleNegativesRankingLoss(models[1], scale=scale, similarity_fct=ref_fct)
    ours_loss = MultipleNegativesRankingLoss(models[0], scale=scale, similarity_fct=similarity)
    columns = [ANCHORS, POSITIVES, NEGATIVES] if with_negatives else [ANCHORS, POSITIVES]
    _compare(models, ours_loss, ref_loss, columns, None)


@pytest.mark.parametrize("with_negatives", [False, True])
def test_symmetric_multiple_negatives_ranking_loss(models: Any, with_negatives: bool) -> None:
    ref_loss = st_losses.MultipleNegativesRankingLoss(
        models[1], directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction"
    )
    ours_loss = MultipleNegativesRankingLoss(models[0], symmetric=True)
    columns = [ANCHORS, POSITIVES, NEGATIVES] if with_negatives else [ANCHORS, POSITIVES]
    _compare(models, ours_loss, ref_loss, columns, None)


@pytest.mark.parametrize("columns", [1, 2])
def test_mse_loss(models: Any, columns: int) -> None:
    teacher = torch.randn(len(ANCHORS), 32, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    _compare(
        models, MSELoss(models[0]), st_losses.MSELoss(models[1]), [ANCHORS, POSITIVES][:columns], teacher
    )


def test_matryoshka_over_mnrl(models: Any) -> None:
    """Cosine-based inner loss: sentence-transformers' renormalization of the prefixes changes nothing."""
    dims, weights = [32, 16, 8], [1.0, 0.5, 0.25]
    ref_loss = st_losses.MatryoshkaLoss(
        models[1], st_losses.MultipleNegativesRankingLoss(models[1]), dims, weights
    )
    ours_loss = MatryoshkaLoss(models[0], MultipleNegativesRankingLoss(models[0]), dims, weights)
    _compare(models, ours_loss, ref_loss, [ANCHORS, POSITIVES, NEGATIVES], None)


def test_matryoshka_over_cosent(models: Any) -> None:
    labels = torch.tensor([4.5, 0.5, 3.8, 2.0, 3.0, 1.0])
    ref_loss = st_losses.MatryoshkaLoss(models[1], st_losses.CoSENTLoss(models[1]), [32, 8])
    ours_loss = MatryoshkaLoss(models[0], CoSENTLoss(models[0]), [32, 8])
    _compare(models, ours_loss, ref_loss, [ANCHORS, POSITIVES], labels)


def test_float32_loss_values_match(tiny_model_path: Path) -> None:
    """In float32 (how training runs) the loss values agree within 1e-5 as well."""
    ours = munjang.load_encoder(tiny_model_path, device="cpu")
    ref = SentenceTransformer(str(tiny_model_path), device="cpu")
    cases: list[tuple[torch.nn.Module, torch.nn.Module, list[list[str]], torch.Tensor | None]] = [
        (
            CosineSimilarityLoss(ours),
            st_losses.CosineSimilarityLoss(ref),
            [ANCHORS, POSITIVES],
            torch.tensor([0.9, 0.1, 0.75, 0.4, 0.6, 0.0]),
        ),
        (
            TripletLoss(ours),
            st_losses.TripletLoss(ref, triplet_margin=1.0),
            [ANCHORS, POSITIVES, NEGATIVES],
            None,
        ),
        (ContrastiveLoss(ours), st_losses.ContrastiveLoss(ref), [ANCHORS, NEGATIVES], _pair_labels()),
        (
            MultipleNegativesRankingLoss(ours),
            st_losses.MultipleNegativesRankingLoss(ref),
            [ANCHORS, POSITIVES, NEGATIVES],
            None,
        ),
    ]
    ref_softmax = st_losses.SoftmaxLoss(ref, 32, num_labels=3)
    ours_softmax = SoftmaxLoss(ours, num_labels=3)
    ours_softmax.classifier.load_state_dict(ref_softmax.classifier.state_dict())
    cases.append((ours_softmax, ref_softmax, [ANCHORS, POSITIVES], torch.tensor([0, 1, 2, 0, 2, 1])))
    with torch.no_grad():
        for ours_loss, ref_loss, columns, labels in cases:
            ours_value = ours_loss([ours.tokenize(c) for c in columns], labels)
            ref_value = ref_loss([_st_features(ref, c) for c in columns], labels)
            assert ours_value.dtype == torch.float32
            assert abs(ours_value.item() - ref_value.item()) <= TOLERANCE, type(ours_loss).__name__
