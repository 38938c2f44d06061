"""Unit tests of the losses: hand-computed values on tiny fixed embeddings, the Matryoshka wrapper,
configs, the symmetric and hard-negative MNRL variants, and the errors bad arguments raise."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModel, AutoTokenizer, BertConfig

from munjang import SentenceEncoder
from munjang.losses import (
    LOSSES,
    AnglELoss,
    ContrastiveLoss,
    CoSENTLoss,
    CosineSimilarityLoss,
    MatryoshkaLoss,
    MSELoss,
    MultipleNegativesRankingLoss,
    OnlineContrastiveLoss,
    SentenceLoss,
    SoftmaxLoss,
    TripletLoss,
    embed,
    merge_plan,
    pairwise_angle_similarity,
)
from munjang.models.hub import embedded_default_path
from munjang.modules import Pooling, Transformer

DIM = 16


@pytest.fixture(scope="module")
def model() -> SentenceEncoder:
    """A seeded 1-layer, 16-dim BERT with mean pooling (built in memory, dropout off)."""
    tokenizer = AutoTokenizer.from_pretrained(str(embedded_default_path()))
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=DIM,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(0)
    return SentenceEncoder(
        [Transformer(AutoModel.from_config(config), tokenizer), Pooling(DIM)], device="cpu"
    )


def t(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32)


# -- hand-computed values ------------------------------------------------------------------------


def test_cosine_similarity_value(model: SentenceEncoder) -> None:
    u = t([[1, 0], [1, 1]])
    v = t([[0, 1], [1, 0]])  # cosines 0 and 1/√2
    labels = torch.tensor([0.5, 1.0])
    expected = ((0 - 0.5) ** 2 + (1 / math.sqrt(2) - 1) ** 2) / 2
    loss = CosineSimilarityLoss(model).compute_from_embeddings([u, v], labels)
    assert loss.item() == pytest.approx(expected, abs=1e-6)


def test_cosine_similarity_custom_parts(model: SentenceEncoder) -> None:
    u, v = t([[1, 0]]), t([[0, 1]])  # cosine 0
    loss = CosineSimilarityLoss(
        model, loss_fct=torch.nn.L1Loss(), cos_score_transformation=torch.nn.Sigmoid()
    )
    assert loss.compute_from_embeddings([u, v], torch.tensor([1.0])).item() == pytest.approx(0.5)


def test_softmax_features_and_value(model: SentenceEncoder) -> None:
    loss = SoftmaxLoss(model, num_labels=3, concatenation_sentence_multiplication=True)
    u, v = torch.randn(2, DIM), torch.randn(2, DIM)
    assert torch.equal(loss.classifier_input(u, v), torch.cat([u, v, (u - v).abs(), u * v], dim=1))
    assert loss.classifier.in_features == 4 * DIM
    with torch.no_grad():  # logits = bias = (0, ln 2, 0): probabilities 1/4, 1/2, 1/4
        loss.classifier.weight.zero_()
        loss.classifier.bias.copy_(torch.tensor([0.0, math.log(2), 0.0]))
    value = loss.compute_from_embeddings([u, v], torch.tensor([1, 0]))
    assert value.item() == pytest.approx((math.log(2) + math.log(4)) / 2, abs=1e-6)
    probabilities = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert loss.compute_from_embeddings([u, v], probabilities).item() == pytest.approx(value.item())


def test_softmax_default_parts(model: SentenceEncoder) -> None:
    loss = SoftmaxLoss(model, num_labels=3)
    assert loss.classifier.in_features == 3 * DIM
    only_difference = SoftmaxLoss(
        model, num_labels=2, concatenation_sentence_rep=False, concatenation_sentence_multiplication=False
    )
    assert only_difference.classifier.in_features == DIM


def test_softmax_logits_save_and_load(model: SentenceEncoder, tmp_path: Path) -> None:
    loss = SoftmaxLoss(model, num_labels=3)
    features = [model.tokenize(["가나다", "hello"]), model.tokenize(["라마바사", "world again"])]
    logits = loss.logits(features)
    assert logits.shape == (2, 3)
    loss.save(tmp_path / "classifier.safetensors")
    other = SoftmaxLoss(model, num_labels=3)
    assert not torch.equal(other.classifier.weight, loss.classifier.weight)
    other.load_classifier(tmp_path / "classifier.safetensors")
    assert torch.equal(other.classifier.weight, loss.classifier.weight)
    assert torch.equal(other.classifier.bias, loss.classifier.bias)
    with pytest.raises(ValueError, match="num_labels"):
        SoftmaxLoss(model, num_labels=4).load_classifier(tmp_path / "classifier.safetensors")


def test_cosent_value(model: SentenceEncoder) -> None:
    u = t([[1, 0], [1, 0], [1, 0]])
    v = t([[1, 0], [0, 1], [-1, 0]])  # cosines 1, 0, -1
    loss = CoSENTLoss(model, scale=2.0)
    labels = torch.tensor([5.0, 2.0, 0.0])  # ranked like the cosines: every pair ordered correctly
    # pairs with y_i > y_j: (0,1) e^{2(0-1)}, (0,2) e^{2(-1-1)}, (1,2) e^{2(-1-0)}
    expected = math.log(1 + 2 * math.exp(-2) + math.exp(-4))
    assert loss.compute_from_embeddings([u, v], labels).item() == pytest.approx(expected)
    swapped = torch.tensor([0.0, 2.0, 5.0])  # ranked against the cosines
    expected = math.log(1 + 2 * math.exp(2) + math.exp(4))
    assert loss.compute_from_embeddings([u, v], swapped).item() == pytest.approx(expected)
    ties = torch.tensor([1.0, 1.0, 1.0])  # no ordered pair: log(1 + 0)
    assert loss.compute_from_embeddings([u, v], ties).item() == 0.0
    raw_scale = CoSENTLoss(model).compute_from_embeddings([u, v], swapped)  # scale 20 needs no overflow care
    assert raw_scale.item() == pytest.approx(40 + math.log(1 + 2 * math.exp(-20) + math.exp(-40)))


def test_angle_similarity_values() -> None:
    # x = (a1, b1), y = (a2, b2): |cos + (b1·a2 − a1·b2)|
    u = t([[1, 0], [1, 0], [0, 1], [3, 4]])
    v = t([[1, 0], [0, 1], [1, 0], [3, 4]])
    # same: 1 + 0; orthogonal (1,0)->(0,1): |0 + (0·0 − 1·1)| = 1; (0,1)->(1,0): |0 + (1·1 − 0)| = 1;
    # an unnormalized row is normalized first: (0.6, 0.8) with itself: 1 + 0
    assert pairwise_angle_similarity(u, v).tolist() == pytest.approx([1.0, 1.0, 1.0, 1.0])
    u = t([[1, 1, 0, 0]])
    v = t([[0, 1, 1, 0]])  # normalized halves (1,1)/√2,(0,0) and (0,1)/√2,(1,0)/√2: cos 1/2, sine −1/2
    assert pairwise_angle_similarity(u, v).item() == pytest.approx(0.0, abs=1e-7)
    odd = pairwise_angle_similarity(t([[1, 2, 2]]), t([[2, 1, 2]]))  # padded to 4 dims with a zero
    padded = pairwise_angle_similarity(t([[1, 2, 2, 0]]), t([[2, 1, 2, 0]]))
    assert odd.item() == pytest.approx(padded.item())


def test_angle_loss_ranks_angle_scores(model: SentenceEncoder) -> None:
    u = t([[1, 1, 0, 0], [1, 0, 0, 0]])
    v = t([[0, 1, 1, 0], [1, 0, 0, 0]])  # angle similarities 0 and 1 (cosines 1/2 and 1)
    labels = torch.tensor([5.0, 0.0])  # ranked against them: log(1 + e^{2(1 − 0)})
    loss = AnglELoss(model, scale=2.0)
    assert loss.compute_from_embeddings([u, v], labels).item() == pytest.approx(math.log(1 + math.e**2))
    assert loss.get_config_dict() == {"scale": 2.0}


@pytest.mark.parametrize(
    ("metric", "margin", "expected"),
    [
        # distances a→p, a→n: euclidean (5, 1) and (1, 3); margin 1: max(5, 0), max(-1, 0)
        ("euclidean", 1.0, (5.0 + 0.0) / 2),
        # manhattan (7, 1) and (1, 3)
        ("manhattan", 1.0, (7.0 + 0.0) / 2),
        # cosine distances: (1 - 0.8, 0) and (0, 1): max(0.2 + 0.5, 0), max(-1 + 0.5, 0)
        ("cosine", 0.5, (0.7 + 0.0) / 2),
    ],
)
def test_triplet_value(model: SentenceEncoder, metric: str, margin: float, expected: float) -> None:
    anchor = t([[1, 0], [1, 0]])
    positive = t([[4, 4], [2, 0]])
    negative = t([[2, 0], [1, 3]])
    if metric == "cosine":
        positive = t([[4, 3], [2, 0]])  # cos 0.8, 1
        negative = t([[2, 0], [0, 3]])  # cos 1, 0
    loss = TripletLoss(model, distance_metric=metric, triplet_margin=margin)
    assert loss.compute_from_embeddings([anchor, positive, negative], None).item() == pytest.approx(expected)


def test_triplet_defaults_follow_the_paper(model: SentenceEncoder) -> None:
    assert TripletLoss(model).get_config_dict() == {"distance_metric": "euclidean", "triplet_margin": 1.0}


def test_contrastive_value(model: SentenceEncoder) -> None:
    u = t([[1, 0], [1, 0], [1, 0]])
    v = t([[0, 1], [1, 1], [0, 1]])  # cosine distances 1, 1 - 1/√2, 1
    labels = torch.tensor([1, 0, 0])  # similar, dissimilar, dissimilar
    d1 = 1 - 1 / math.sqrt(2)
    per_pair = [0.5 * 1.0**2, 0.5 * (0.5 - d1) ** 2, 0.0]  # the far dissimilar pair costs nothing
    mean_loss = ContrastiveLoss(model).compute_from_embeddings([u, v], labels)
    assert mean_loss.item() == pytest.approx(sum(per_pair) / 3)
    sum_loss = ContrastiveLoss(model, size_average=False).compute_from_embeddings([u, v], labels)
    assert sum_loss.item() == pytest.approx(sum(per_pair))


def test_contrastive_label_one_means_similar(model: SentenceEncoder) -> None:
    same = t([[1, 0]])
    assert ContrastiveLoss(model).compute_from_embeddings([same, same], torch.tensor([1])).item() == 0.0
    assert ContrastiveLoss(model).compute_from_embeddings([same, same], torch.tensor([0])).item() > 0.0


def test_contrastive_warns_on_non_binary_labels(model: SentenceEncoder) -> None:
    loss = ContrastiveLoss(model)
    with pytest.warns(UserWarning, match="similar pair"):
        loss.compute_from_embeddings([t([[1, 0]]), t([[0, 1]])], torch.tensor([0.5]))


def test_online_contrastive_value(model: SentenceEncoder) -> None:
    # euclidean distances: positives 1 and 4, negatives 2 and 5; margin 3
    u = t([[0, 0], [0, 0], [0, 0], [0, 0]])
    v = t([[1, 0], [4, 0], [2, 0], [5, 0]])
    labels = torch.tensor([1, 1, 0, 0])
    # hard positives: farther than the closest negative (2): only 4; hard negatives: closer than the
    # farthest positive (4): only 2.  loss = 4² + max(3 - 2, 0)² = 17
    loss = OnlineContrastiveLoss(model, distance_metric="euclidean", margin=3.0)
    assert loss.compute_from_embeddings([u, v], labels).item() == pytest.approx(17.0)


def test_online_contrastive_with_one_kind_only(model: SentenceEncoder) -> None:
    u = t([[0, 0], [0, 0], [0, 0]])
    v = t([[1, 0], [2, 0], [6, 0]])  # all positives, mean distance 3: only 6 counts
    loss = OnlineContrastiveLoss(model, distance_metric="euclidean", margin=3.0)
    assert loss.compute_from_embeddings([u, v], torch.tensor([1, 1, 1])).item() == pytest.approx(36.0)


def test_mnrl_value(model: SentenceEncoder) -> None:
    anchors = t([[1, 0], [0, 1]])
    positives = t([[1, 0], [0, 1]])  # cosine matrix = identity
    loss = MultipleNegativesRankingLoss(model, scale=1.0)
    expected = math.log(1 + math.exp(-1))  # -log(e^1 / (e^1 + e^0)) for each anchor
    assert loss.compute_from_embeddings([anchors, positives], None).item() == pytest.approx(expected)


def test_mnrl_dot_similarity(model: SentenceEncoder) -> None:
    anchors = t([[2, 0], [0, 1]])
    positives = t([[1, 0], [0, 3]])  # dot products: [[2, 0], [0, 3]]
    loss = MultipleNegativesRankingLoss(model, scale=1.0, similarity_fct="dot")
    expected = (math.log(1 + math.exp(-2)) + math.log(1 + math.exp(-3))) / 2
    assert loss.compute_from_embeddings([anchors, positives], None).item() == pytest.approx(expected)


def test_mnrl_hard_negatives_change_the_loss(model: SentenceEncoder) -> None:
    anchors = t([[1, 0], [0, 1]])
    positives = t([[1, 0.2], [0.1, 1]])
    negatives = t([[1, 0.1], [0, 1]])  # close to their anchors
    loss = MultipleNegativesRankingLoss(model)
    plain = loss.compute_from_embeddings([anchors, positives], None)
    with_negatives = loss.compute_from_embeddings([anchors, positives, negatives], None)
    assert with_negatives.item() > plain.item()
    scores = 20 * F.normalize(anchors, dim=1) @ F.normalize(torch.cat([positives, negatives]), dim=1).T
    expected = F.cross_entropy(scores, torch.arange(2))
    assert with_negatives.item() == pytest.approx(expected.item())


def test_symmetric_mnrl_is_the_mean_of_both_directions(model: SentenceEncoder) -> None:
    anchors = t([[1, 0, 0], [0, 1, 0], [0.7, 0.7, 0.1]])
    positives = t([[0.9, 0.3, 0], [0, 1, 0.5], [0.2, 0.9, 0.3]])
    negatives = t([[0, 0, 1], [1, 1, 1], [0.5, 0, 0.5]])
    plain = MultipleNegativesRankingLoss(model, scale=5.0)
    symmetric = MultipleNegativesRankingLoss(model, scale=5.0, symmetric=True)
    for columns in ([anchors, positives], [anchors, positives, negatives]):
        forward = plain.compute_from_embeddings(columns, None)
        backward = plain.compute_from_embeddings([positives, anchors], None)  # positives pick anchors
        both = symmetric.compute_from_embeddings(columns, None)
        assert both.item() != pytest.approx(forward.item())
        assert both.item() == pytest.approx((forward.item() + backward.item()) / 2)


def test_mse_value(model: SentenceEncoder) -> None:
    student_a = t([[1, 2], [0, 0]])
    student_b = t([[0, 0], [0, 0]])
    teacher = t([[0, 0], [1, 1]])
    # column a: ((1)² + (2)² + 1 + 1) / 4 = 1.75; column b: (0 + 0 + 1 + 1) / 4 = 0.5
    loss = MSELoss(model)
    assert loss.compute_from_embeddings([student_a], teacher).item() == pytest.approx(1.75)
    assert loss.compute_from_embeddings([student_a, student_b], teacher).item() == pytest.approx(1.125)
    per_column = torch.stack([teacher, torch.zeros(2, 2)], dim=1)  # (batch, columns, dim)
    assert loss.compute_from_embeddings([student_a, student_b], per_column).item() == pytest.approx(
        (1.75 + 0.0) / 2
    )


def test_mse_shape_errors(model: SentenceEncoder) -> None:
    loss = MSELoss(model)
    with pytest.raises(ValueError, match="teacher embeddings"):
        loss.compute_from_embeddings([t([[1, 2]])], None)
    with pytest.raises(ValueError, match="shape"):
        loss.compute_from_embeddings([t([[1, 2]])], t([[1, 2, 3]]))


# -- Matryoshka ------------------------------------------------------------------------------------


def test_matryoshka_full_dimension_is_the_wrapped_loss_times_weight(model: SentenceEncoder) -> None:
    torch.manual_seed(1)
    columns = [torch.randn(4, DIM) for _ in range(3)]
    for inner in (MultipleNegativesRankingLoss(model), TripletLoss(model)):
        wrapped = MatryoshkaLoss(model, inner, [DIM], [0.3])
        assert wrapped.compute_from_embeddings(columns, None).item() == pytest.approx(
            0.3 * inner.compute_from_embeddings(columns, None).item()
        )


def test_matryoshka_sums_weighted_truncations(model: SentenceEncoder) -> None:
    torch.manual_seed(2)
    u, v = torch.randn(5, DIM), torch.randn(5, DIM)
    labels = torch.tensor([0.1, 0.9, 0.5, 0.3, 0.7])
    inner = CosineSimilarityLoss(model)
    wrapped = MatryoshkaLoss(model, inner, [4, DIM, 8], [1.0, 2.0, 0.5])
    assert wrapped.matryoshka_dims == (DIM, 8, 4)  # largest first
    assert wrapped.matryoshka_weights == (2.0, 0.5, 1.0)
    expected = sum(
        w * inner.compute_from_embeddings([u[:, :d], v[:, :d]], labels).item()
        for d, w in ((DIM, 2.0), (8, 0.5), (4, 1.0))
    )
    assert wrapped.compute_from_embeddings([u, v], labels).item() == pytest.approx(expected, rel=1e-6)


def test_matryoshka_truncates_teacher_labels(model: SentenceEncoder) -> None:
    student, teacher = torch.randn(3, DIM), torch.randn(3, DIM)
    inner = MSELoss(model)
    wrapped = MatryoshkaLoss(model, inner, [DIM, 4])
    expected = F.mse_loss(student, teacher) + F.mse_loss(student[:, :4], teacher[:, :4])
    assert wrapped.compute_from_embeddings([student], teacher).item() == pytest.approx(expected.item())


def test_matryoshka_forward_embeds_once(model: SentenceEncoder) -> None:
    calls = 0

    def count(*_: object) -> None:
        nonlocal calls
        calls += 1

    handle = model.register_forward_hook(count)
    try:
        wrapped = MatryoshkaLoss(model, MultipleNegativesRankingLoss(model), [DIM, 8, 4])
        value = wrapped([model.tokenize(["하나", "둘"]), model.tokenize(["one", "two"])], None)
    finally:
        handle.remove()
    assert calls == 1  # one merged forward for both columns, shared by the three dimensions
    assert value.requires_grad


def test_matryoshka_bad_arguments(model: SentenceEncoder) -> None:
    inner = CoSENTLoss(model)
    with pytest.raises(ValueError, match="between 1 and the embedding dimension"):
        MatryoshkaLoss(model, inner, [DIM * 2])
    with pytest.raises(ValueError, match="matryoshka_weights has 1 entries"):
        MatryoshkaLoss(model, inner, [DIM, 8], [1.0])
    with pytest.raises(ValueError, match="at least one"):
        MatryoshkaLoss(model, inner, [])
    with pytest.raises(ValueError, match="repeated"):
        MatryoshkaLoss(model, inner, [8, 8])
    with pytest.raises(ValueError, match="SoftmaxLoss"):
        MatryoshkaLoss(model, SoftmaxLoss(model, num_labels=3), [8])


# -- forward through a real model -------------------------------------------------------------------


def test_forward_gives_a_scalar_with_gradients(model: SentenceEncoder) -> None:
    features = [model.tokenize(["남자가 기타를 친다.", "A cat."]), model.tokenize(["악기 연주", "고양이"])]
    keys_before = [set(f) for f in features]
    loss = CosineSimilarityLoss(model)(features, torch.tensor([0.8, 0.6]))
    assert loss.dim() == 0 and loss.requires_grad
    assert [set(f) for f in features] == keys_before  # the caller's dicts are not written to
    assert [e.shape for e in embed(model, features)] == [(2, DIM), (2, DIM)]


def test_merge_plan_shares_a_pass_only_where_it_pads_less_than_a_pass_costs() -> None:
    assert merge_plan([20, 22], [16, 16]) == [[0, 1]]  # similar lengths: one pass
    assert merge_plan([100, 25, 24], [64, 64, 64]) == [[0], [1, 2]]  # a long premise alone
    assert merge_plan([30, 90, 31], [8, 8, 8], pass_cost=0) == [[1], [2], [0]]  # passes free: none shared
    assert merge_plan([30, 90, 31], [8, 8, 8], pass_cost=10**6) == [[0, 1, 2]]


def test_columns_embed_alike_in_one_pass_or_several(model: SentenceEncoder) -> None:
    features = [
        model.tokenize(["남자가 기타를 치고 있고 여자는 노래를 부르고 있다, 아주 긴 문장으로.", "A cat."]),
        model.tokenize(["악기", "고양이"]),
        model.tokenize(["노래", "개"]),
    ]
    model.eval()
    with torch.no_grad():
        shared = embed(model, features, pass_cost=10**6)
        apart = embed(model, features, pass_cost=0)
    for a, b in zip(shared, apart, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


# -- configs and the registry ------------------------------------------------------------------------


def test_config_dicts(model: SentenceEncoder) -> None:
    assert SoftmaxLoss(model, num_labels=3).get_config_dict() == {
        "num_labels": 3,
        "concatenation_sentence_rep": True,
        "concatenation_sentence_difference": True,
        "concatenation_sentence_multiplication": False,
    }
    assert CosineSimilarityLoss(model).get_config_dict() == {
        "loss_fct": "MSELoss",
        "cos_score_transformation": "Identity",
    }
    assert CoSENTLoss(model, scale=10.0).get_config_dict() == {"scale": 10.0}
    assert TripletLoss(model, "cosine", 0.3).get_config_dict() == {
        "distance_metric": "cosine",
        "triplet_margin": 0.3,
    }
    assert ContrastiveLoss(model).get_config_dict() == {
        "distance_metric": "cosine",
        "margin": 0.5,
        "size_average": True,
    }
    assert OnlineContrastiveLoss(model, "euclidean", 2.0).get_config_dict() == {
        "distance_metric": "euclidean",
        "margin": 2.0,
    }
    assert MultipleNegativesRankingLoss(model, symmetric=True).get_config_dict() == {
        "scale": 20.0,
        "similarity_fct": "cosine",
        "symmetric": True,
        "gather_across_devices": True,
    }
    assert MSELoss(model).get_config_dict() == {}
    assert MatryoshkaLoss(model, CoSENTLoss(model), [8, DIM]).get_config_dict() == {
        "loss": "CoSENTLoss",
        "matryoshka_dims": [DIM, 8],
        "matryoshka_weights": [1.0, 1.0],
    }


def test_registry() -> None:
    assert set(LOSSES) == {
        "softmax",
        "cosine",
        "cosent",
        "angle",
        "triplet",
        "contrastive",
        "online_contrastive",
        "mnrl",
        "mse",
        "matryoshka",
        "cached_mnrl",
        "gist",
        "cached_gist",
    }
    assert LOSSES["mnrl"] is MultipleNegativesRankingLoss
    assert all(issubclass(cls, SentenceLoss) for cls in LOSSES.values())


# -- bad arguments ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [TripletLoss, ContrastiveLoss, OnlineContrastiveLoss])
def test_unknown_distance_metric(model: SentenceEncoder, cls: type[SentenceLoss]) -> None:
    with pytest.raises(ValueError, match=r"unknown distance metric 'dot'; choose from cosine, euclidean"):
        cls(model, distance_metric="dot")  # type: ignore[call-arg]


def test_wrong_number_of_columns(model: SentenceEncoder) -> None:
    two = [model.tokenize(["a"]), model.tokenize(["b"])]
    with pytest.raises(ValueError, match="TripletLoss takes 3 text columns per example, got 2"):
        TripletLoss(model)(two, None)
    with pytest.raises(ValueError, match="CosineSimilarityLoss takes 2 text columns per example, got 3"):
        CosineSimilarityLoss(model).compute_from_embeddings([t([[1.0]])] * 3, torch.tensor([1.0]))
    with pytest.raises(ValueError, match="takes at least 2 text columns per example, got 1"):
        MultipleNegativesRankingLoss(model)(two[:1], None)
    with pytest.raises(ValueError, match="SoftmaxLoss takes 2"):
        SoftmaxLoss(model, num_labels=3)(two[:1], torch.tensor([0]))


def test_bad_labels(model: SentenceEncoder) -> None:
    u, v = t([[1, 0], [0, 1]]), t([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="needs labels"):
        CoSENTLoss(model).compute_from_embeddings([u, v], None)
    with pytest.raises(ValueError, match="expects 2 labels"):
        ContrastiveLoss(model).compute_from_embeddings([u, v], torch.tensor([1, 0, 1]))


def test_bad_hyper_parameters(model: SentenceEncoder) -> None:
    with pytest.raises(ValueError, match="unknown similarity function 'euclidean'"):
        MultipleNegativesRankingLoss(model, similarity_fct="euclidean")
    with pytest.raises(ValueError, match="scale must be positive"):
        MultipleNegativesRankingLoss(model, scale=0.0)
    with pytest.raises(ValueError, match="scale must be positive"):
        CoSENTLoss(model, scale=-1.0)
    with pytest.raises(ValueError, match="at least one of"):
        SoftmaxLoss(model, 3, False, False, False)
    with pytest.raises(ValueError, match="num_labels must be at least 2"):
        SoftmaxLoss(model, num_labels=1)
