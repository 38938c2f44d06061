"""Triplet, binary classification, MSE, translation, label accuracy and sequential evaluators.

Hand-computed answers on a toy encoder with fixed vectors, the threshold search against
sentence-transformers' own functions and scikit-learn on random scores with ties, and the metric
values against sentence-transformers' evaluators on real sentences with the embedded MiniLM.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import munjang
from munjang.data import Example
from munjang.data.nli import NLIData, read_nli
from munjang.data.parallel import ParallelData, align_stsb_korsts
from munjang.data.sts import read_sts
from munjang.evaluation import STSEvaluator
from munjang.evaluation import translation as translation_module
from munjang.evaluation.binary_classification import (
    BinaryClassificationEvaluator,
    average_precision,
    best_accuracy_threshold,
    best_f1_threshold,
    matthews_correlation,
)
from munjang.evaluation.label_accuracy import LabelAccuracyEvaluator, macro_f1
from munjang.evaluation.mse import MSEEvaluator
from munjang.evaluation.sequential import SequentialEvaluator
from munjang.evaluation.translation import TranslationEvaluator
from munjang.evaluation.triplet import TripletEvaluator

FNS = ["cosine", "dot", "euclidean", "manhattan"]
TOLERANCE = 1e-6


class FakeEncoder:
    """Looks up fixed vectors; records what it was asked to encode and with which options."""

    def __init__(self, vectors: dict[str, Any], similarity_fn_name: str = "cosine") -> None:
        self.vectors = {k: np.asarray(v, dtype=np.float32) for k, v in vectors.items()}
        self.similarity_fn_name = similarity_fn_name
        self.calls: list[tuple[list[str], dict[str, Any]]] = []

    def encode(self, sentences: list[str], **kwargs: Any) -> Any:
        self.calls.append((list(sentences), kwargs))
        out = np.stack([self.vectors[s] for s in sentences])
        return torch.from_numpy(out) if kwargs.get("convert_to_tensor") else out


def unit(cosine: float) -> list[float]:
    """The 2-D unit vector whose cosine with (1, 0) is `cosine`."""
    return [cosine, math.sqrt(1 - cosine**2)]


# -- TripletEvaluator ------------------------------------------------------------------------------

TRIPLET_VECTORS = {
    # (anchor, positive, negative); the comment says which functions rank it right
    "a1": [1, 0], "p1": [2, 0], "n1": [0, 1],  # all
    "a2": [1, 0], "p2": [3, 1], "n2": [1, 1],  # cosine, dot
    "a3": [1, 0], "p3": [1, 1], "n3": [4, 0],  # euclidean, manhattan
    "a4": [1, 0], "pn4": [0, 1],  # positive == negative: a tie, wrong for all
    "a5": [1, 0], "p5": [1, 0.1], "n5": [5, 5],  # cosine, euclidean, manhattan
    "a6": [1, 1], "p6": [2.5, 2.5], "n6": [3.5, 1],  # cosine, dot, euclidean
}  # fmt: skip
ANCHORS = ["a1", "a2", "a3", "a4", "a5", "a6"]
POSITIVES = ["p1", "p2", "p3", "pn4", "p5", "p6"]
NEGATIVES = ["n1", "n2", "n3", "pn4", "n5", "n6"]


def test_triplet_hand_computed() -> None:
    encoder = FakeEncoder(TRIPLET_VECTORS, similarity_fn_name="dot")
    evaluator = TripletEvaluator(ANCHORS, POSITIVES, NEGATIVES, name="toy", batch_size=4, prompt_name="query")
    metrics = evaluator(encoder)
    assert metrics == pytest.approx(
        {
            "cosine_accuracy": 4 / 6,
            "dot_accuracy": 3 / 6,
            "euclidean_accuracy": 4 / 6,
            "manhattan_accuracy": 3 / 6,
        }
    )
    assert evaluator.primary_metric == "dot_accuracy"
    (texts, options), *_ = encoder.calls
    assert len(encoder.calls) == 1 and len(texts) == len(set(texts)) == 17  # each distinct text once
    assert options["batch_size"] == 4 and options["prompt_name"] == "query" and "prompt" not in options
    margin = TripletEvaluator(ANCHORS, POSITIVES, NEGATIVES, margin={"dot": 2.5}, main_similarity="cosine")
    assert margin(encoder)["dot_accuracy"] == 0.0 and margin.primary_metric == "cosine_accuracy"
    assert margin.get_config_dict()["margin"]["dot"] == 2.5
    examples = [Example(t) for t in zip(ANCHORS, POSITIVES, NEGATIVES, strict=True)]
    assert TripletEvaluator.from_examples(examples, similarity_fns="cosine")(encoder) == pytest.approx(
        {"cosine_accuracy": 4 / 6, "dot_accuracy": 3 / 6}  # the encoder's own function is added
    )


def test_triplet_argument_checks() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        TripletEvaluator(["a"], ["b"], [])
    with pytest.raises(ValueError, match="unknown similarity"):
        TripletEvaluator(["a"], ["b"], ["c"], similarity_fns=["cos"])
    with pytest.raises(ValueError, match="not among"):
        TripletEvaluator(["a"], ["b"], ["c"], similarity_fns=["dot"], main_similarity="cosine")
    with pytest.raises(ValueError, match="margin"):
        TripletEvaluator(["a"], ["b"], ["c"], margin={"cos": 1.0})
    with pytest.raises(ValueError, match="3"):
        TripletEvaluator.from_examples([Example(("a", "b"))])


# -- BinaryClassificationEvaluator -----------------------------------------------------------------

PAIR_COSINES = [0.9, 0.8, 0.6, 0.3]
PAIR_LABELS = [1, 0, 1, 0]


def test_binary_hand_computed() -> None:
    vectors = {"x": [1, 0], **{f"y{i}": unit(c) for i, c in enumerate(PAIR_COSINES)}}
    encoder = FakeEncoder(vectors)
    evaluator = BinaryClassificationEvaluator(["x"] * 4, [f"y{i}" for i in range(4)], PAIR_LABELS)
    metrics = evaluator(encoder)
    distances = [math.sqrt(2 - 2 * c) for c in PAIR_COSINES]  # unit vectors: |a-b|^2 = 2 - 2 cos
    for fn in ("cosine", "dot"):
        assert metrics[f"{fn}_accuracy"] == pytest.approx(0.75)
        assert metrics[f"{fn}_accuracy_threshold"] == pytest.approx(0.85, abs=1e-6)
        assert metrics[f"{fn}_f1"] == pytest.approx(0.8)
        assert metrics[f"{fn}_precision"] == pytest.approx(2 / 3)
        assert metrics[f"{fn}_recall"] == pytest.approx(1.0)
        assert metrics[f"{fn}_f1_threshold"] == pytest.approx(0.45, abs=1e-6)
        assert metrics[f"{fn}_ap"] == pytest.approx(0.5 + 0.5 * 2 / 3)
        assert metrics[f"{fn}_mcc"] == pytest.approx(2 / math.sqrt(12))
    # Thresholds on distances are distances: similar when distance <= threshold.
    assert metrics["euclidean_accuracy_threshold"] == pytest.approx(
        (distances[0] + distances[1]) / 2, abs=1e-6
    )
    assert metrics["euclidean_f1_threshold"] == pytest.approx((distances[2] + distances[3]) / 2, abs=1e-6)
    assert metrics["euclidean_ap"] == pytest.approx(metrics["cosine_ap"])
    assert evaluator.primary_metric == "cosine_ap"
    assert len(metrics) == 4 * 8


def test_binary_threshold_search_edge_cases() -> None:
    # Ties enter together: the cut can only fall between distinct scores.
    assert best_accuracy_threshold([0.5, 0.5, 0.1], [1, 1, 0]) == (1.0, pytest.approx(0.3))
    assert best_accuracy_threshold([0.5, 0.5, 0.1], [1, 0, 0]) == (pytest.approx(2 / 3), np.nextafter(0.5, 1))
    # No cut beats "all dissimilar": the threshold sits just above the best score.
    accuracy, threshold = best_accuracy_threshold([0.9, 0.1], [0, 1])
    assert accuracy == 0.5 and threshold == np.nextafter(0.9, np.inf)
    assert tuple(best_f1_threshold([0.9, 0.1], [0, 0])) == (0.0, 0.0, 0.0, 0.0)
    assert math.isnan(average_precision([0.9, 0.1], [0, 0]))
    # distances 1 (dissimilar), 2, 3 (similar): precision 0, 1/2, 2/3 at recall 0, 1/2, 1
    assert average_precision([3.0, 1.0, 2.0], [1, 0, 1], greater_is_better=False) == pytest.approx(
        0.5 / 2 + 0.5 * 2 / 3
    )
    assert matthews_correlation(np.array([1, 1]), np.array([1, 0])) == 0.0


def test_binary_argument_checks() -> None:
    with pytest.raises(ValueError, match="0 \\(dissimilar\\) or 1"):
        BinaryClassificationEvaluator(["a", "b"], ["c", "d"], [1, 2])
    with pytest.raises(ValueError, match="at least one similar"):
        BinaryClassificationEvaluator(["a", "b"], ["c", "d"], [1, 1])
    with pytest.raises(ValueError, match="differ in length"):
        BinaryClassificationEvaluator(["a"], ["c", "d"], [1, 0])
    evaluator = BinaryClassificationEvaluator.from_examples(
        [Example(("a", "b"), 1), Example(("a", "c"), 0)], main_similarity="dot", similarity_fns=["dot"]
    )
    assert evaluator.primary_metric == "dot_ap"
    assert evaluator.get_config_dict() == {"similarity_fns": ["dot"], "main_similarity": "dot"}


def st_evaluation() -> Any:
    pytest.importorskip("sentence_transformers")
    try:  # sentence-transformers >= 6 moved the evaluators; older releases only have the second path
        from sentence_transformers.sentence_transformer import evaluation
    except ImportError:  # pragma: no cover
        from sentence_transformers import evaluation
    return evaluation


@pytest.mark.parametrize("seed", range(12))
def test_threshold_search_matches_sentence_transformers_and_sklearn(seed: int) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    st_binary = st_evaluation().BinaryClassificationEvaluator
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    scores = rng.integers(0, 8, n).astype(np.float32) / 4  # few distinct values: many ties
    labels = rng.integers(0, 2, n)
    labels[:2] = [0, 1]
    for greater in (True, False):
        acc, threshold = best_accuracy_threshold(scores, labels, greater)
        st_acc, st_threshold = st_binary.find_best_acc_and_threshold(scores, labels, greater)
        assert acc == pytest.approx(st_acc, abs=1e-12)
        assert threshold == pytest.approx(float(st_threshold), abs=TOLERANCE)
        ours = best_f1_threshold(scores, labels, greater)
        theirs = st_binary.find_best_f1_and_threshold(scores, labels, greater)
        assert tuple(ours) == pytest.approx(tuple(float(x) for x in theirs), abs=1e-12)
        sign = 1 if greater else -1
        assert average_precision(scores, labels, greater) == pytest.approx(
            metrics.average_precision_score(labels, sign * scores), abs=1e-12
        )
        predicted = scores >= ours.threshold if greater else scores <= ours.threshold
        assert matthews_correlation(predicted, labels) == pytest.approx(
            metrics.matthews_corrcoef(labels, predicted), abs=1e-12
        )


# -- MSEEvaluator ----------------------------------------------------------------------------------


def test_mse_hand_computed() -> None:
    teacher = FakeEncoder({"s1": [1, 2], "s2": [0, 0]})
    student = FakeEncoder({"t1": [1, 0], "t2": [0, 1]})
    evaluator = MSEEvaluator(["s1", "s2"], ["t1", "t2"], teacher, teacher_prompt_name="passage")
    # differences (0, 2) and (0, -1): (0 + 4 + 0 + 1) / 4 = 1.25, times 100
    assert evaluator(student) == pytest.approx({"mse": 125.0, "negative_mse": -125.0})
    assert evaluator.primary_metric == "negative_mse"
    assert teacher.calls[0][1]["prompt_name"] == "passage" and "prompt_name" not in student.calls[0][1]
    given = MSEEvaluator.from_data(
        ParallelData(["s1", "s2"], ["t1", "t2"]), torch.tensor([[1.0, 2.0], [0.0, 0.0]])
    )
    assert given(student)["mse"] == pytest.approx(125.0)
    with pytest.raises(ValueError, match="expected \\(2, dim\\)"):
        MSEEvaluator(["s1", "s2"], ["t1", "t2"], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="the teacher's"):
        MSEEvaluator(["s1", "s2"], ["t1", "t2"], np.zeros((2, 3)))(student)


# -- TranslationEvaluator --------------------------------------------------------------------------

TRANSLATION_VECTORS = {
    "s1": [1, 0], "s2": [0, 1], "s3": [-1, 0],
    "t1": [1, 0], "t2": [0.9, 0.1], "t3": [-1, 0.1],
}  # fmt: skip


def test_translation_hand_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = FakeEncoder(TRANSLATION_VECTORS)
    evaluator = TranslationEvaluator(["s1", "s2", "s3"], ["t1", "t2", "t3"])
    # s1 -> t1, s2 -> t2 (cos 0.11 beats 0.10 and 0), s3 -> t3; but t2 is nearest to s1, not s2
    expected = {"src2trg_accuracy": 1.0, "trg2src_accuracy": 2 / 3, "mean_accuracy": 5 / 6}
    assert evaluator(encoder) == pytest.approx(expected)
    assert evaluator.primary_metric == "mean_accuracy"
    monkeypatch.setattr(translation_module, "CHUNK_ROWS", 1)
    assert evaluator(encoder) == pytest.approx(expected)
    # A repeated target text counts as found whichever copy is nearest.
    repeated = TranslationEvaluator(["s1", "s3"], ["t1", "t1"])
    assert repeated(encoder)["src2trg_accuracy"] == 1.0
    assert repeated(encoder)["trg2src_accuracy"] == 0.5
    with pytest.raises(ValueError, match="unknown similarity"):
        TranslationEvaluator(["a"], ["b"], similarity_fn="cos")


# -- LabelAccuracyEvaluator ------------------------------------------------------------------------

ONE_HOT = {"e": [1, 0, 0], "n": [0, 1, 0], "c": [0, 0, 1]}


def add_classifier(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return u + v


def test_label_accuracy_hand_computed() -> None:
    encoder = FakeEncoder(ONE_HOT)
    pairs = [("e", "e"), ("n", "e"), ("c", "c"), ("n", "n")]
    evaluator = LabelAccuracyEvaluator(pairs, [0, 1, 2, 2], add_classifier, batch_size=3, prompt="x: ")
    # logits u + v -> predictions 0, 0 (first of a tie), 2, 1
    metrics = evaluator(encoder)
    assert metrics["accuracy"] == 0.5
    assert metrics["macro_f1"] == pytest.approx((2 / 3 + 0 + 2 / 3) / 3)
    assert evaluator.primary_metric == "accuracy"
    (texts, options), *_ = encoder.calls
    assert sorted(texts) == ["c", "e", "n"] and options["convert_to_tensor"] is True
    assert options["prompt"] == "x: " and evaluator.get_config_dict() == {"prompt": "x: "}
    nli = NLIData(["e", "n", "c", "n"], ["e", "e", "c", "n"], [0, 1, 2, 2])
    assert LabelAccuracyEvaluator.from_nli(nli, add_classifier)(encoder) == metrics
    examples = [Example(p, y) for p, y in zip(pairs, [0, 1, 2, 2], strict=True)]
    assert LabelAccuracyEvaluator.from_examples(examples, add_classifier)(encoder) == metrics


class PairHead(torch.nn.Module):
    """A SoftmaxLoss-like head: a linear layer over (u, v); records the mode it was called in."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(6, 3)
        with torch.no_grad():
            self.linear.weight.copy_(torch.cat([torch.eye(3), torch.eye(3)], dim=1))
            self.linear.bias.zero_()
        self.modes: list[bool] = []

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        self.modes.append(self.training)
        assert not torch.is_grad_enabled()
        return self.linear(torch.cat([u, v], dim=1))


def test_label_accuracy_module_classifier() -> None:
    head = PairHead().train()
    evaluator = LabelAccuracyEvaluator([("e", "e"), ("c", "n"), ("c", "c")], [0, 1, 2], head, batch_size=2)
    # (c, n) gives logits (0, 1, 1): the tie goes to the first, class 1
    assert evaluator(FakeEncoder(ONE_HOT)) == {"accuracy": 1.0, "macro_f1": 1.0}
    assert head.modes == [False, False]  # eval mode during the call, two batches
    assert head.training  # and the training mode restored after it


def test_label_accuracy_checks() -> None:
    with pytest.raises(ValueError, match="class indices"):
        LabelAccuracyEvaluator([("a", "b")], [-1], add_classifier)
    with pytest.raises(ValueError, match="a pair needs 2"):
        LabelAccuracyEvaluator([("a", "b", "c")], [0], add_classifier)  # type: ignore[list-item]
    too_few = LabelAccuracyEvaluator([("e", "e")], [5], add_classifier)
    with pytest.raises(ValueError, match="labels go up to 5"):
        too_few(FakeEncoder(ONE_HOT))


@pytest.mark.parametrize("seed", range(5))
def test_macro_f1_matches_sklearn(seed: int) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 4, 30)
    predicted = rng.integers(0, 3, 30)
    assert macro_f1(predicted, gold) == pytest.approx(
        metrics.f1_score(gold, predicted, average="macro"), abs=1e-12
    )


# -- SequentialEvaluator ---------------------------------------------------------------------------


def test_sequential() -> None:
    encoder = FakeEncoder({**TRIPLET_VECTORS, **TRANSLATION_VECTORS})
    triplet = TripletEvaluator(ANCHORS, POSITIVES, NEGATIVES, name="nli", similarity_fns=["cosine"])
    translation = TranslationEvaluator(["s1", "s2", "s3"], ["t1", "t2", "t3"], name="en-ko")
    sequential = SequentialEvaluator([triplet, translation])
    metrics = sequential(encoder)
    assert metrics == pytest.approx(
        {
            "nli_cosine_accuracy": 4 / 6,
            "en-ko_src2trg_accuracy": 1.0,
            "en-ko_trg2src_accuracy": 2 / 3,
            "en-ko_mean_accuracy": 5 / 6,
        }
    )
    assert sequential.primary_metric == "en-ko_mean_accuracy"
    averaged = SequentialEvaluator([triplet, translation], main_score_function=statistics.mean)
    assert averaged(encoder)["sequential_score"] == pytest.approx((4 / 6 + 5 / 6) / 2)
    assert averaged.primary_metric == "sequential_score"
    config = averaged.get_config_dict()["evaluators"]
    assert config[0] == {"type": "TripletEvaluator", "name": "nli", "similarity_fns": ["cosine"]}
    with pytest.raises(ValueError, match="names must differ"):
        SequentialEvaluator([triplet, TripletEvaluator(["a1"], ["p1"], ["n1"], name="nli")])
    unnamed = TripletEvaluator(ANCHORS, POSITIVES, NEGATIVES)
    with pytest.raises(ValueError, match="both report 'cosine_accuracy'"):
        SequentialEvaluator([unnamed, unnamed])(encoder)
    with pytest.raises(ValueError, match="no evaluators"):
        SequentialEvaluator([])


# -- parity with sentence-transformers on the embedded MiniLM --------------------------------------


@pytest.fixture(scope="module")
def st_model(minilm_path: Path) -> Any:
    st = pytest.importorskip("sentence_transformers")
    return st.SentenceTransformer(str(minilm_path), device="cpu")


@pytest.fixture(scope="module")
def stsb_pairs(data_dir: Path) -> tuple[list[str], list[str], list[float]]:
    data = read_sts(data_dir / "stsb" / "sts-test.csv")
    return data.sentences1[:30], data.sentences2[:30], data.scores[:30]


@pytest.fixture(scope="module")
def en_ko(data_dir: Path) -> ParallelData:
    data = align_stsb_korsts(data_dir / "stsb" / "sts-test.csv", data_dir / "korsts" / "sts-test.tsv")
    return ParallelData(data.sources[:20], data.targets[:20])


def assert_parity(ours: dict[str, float], theirs: dict[str, float], rel: float | None = None) -> None:
    """Same keys (sentence-transformers adds max_* over the similarity functions) and values within 1e-6.

    With munjang's own encoder the embeddings differ from sentence-transformers' by float32 rounding
    (about 1e-7), so `rel` also allows that much relative error on large values such as manhattan
    distance thresholds (about 12 for MiniLM).
    """
    assert set(ours) == {k for k in theirs if not k.startswith("max_")}
    for key, value in ours.items():
        assert value == pytest.approx(float(theirs[key]), abs=TOLERANCE, rel=rel), key


def test_binary_parity(st_model: Any, encoder: munjang.SentenceEncoder, stsb_pairs: Any) -> None:
    pytest.importorskip("sklearn")
    s1, s2, scores = stsb_pairs
    labels = [int(s >= 3.5) for s in scores]
    theirs = st_evaluation().BinaryClassificationEvaluator(
        s1, s2, labels, similarity_fn_names=FNS, write_csv=False
    )(st_model)
    evaluator = BinaryClassificationEvaluator(s1, s2, labels)
    assert_parity(evaluator(st_model), theirs)
    assert_parity(evaluator(encoder), theirs, rel=TOLERANCE)
    assert 0.5 < theirs["cosine_accuracy"] < 1.0  # a real test, not a trivially separable one


def test_triplet_parity(st_model: Any, encoder: munjang.SentenceEncoder, stsb_pairs: Any) -> None:
    s1, s2, _ = stsb_pairs
    anchors, positives, negatives = s1[:-1], s2[:-1], s2[1:]
    theirs = st_evaluation().TripletEvaluator(
        anchors, positives, negatives, similarity_fn_names=FNS, write_csv=False
    )(st_model)
    evaluator = TripletEvaluator(anchors, positives, negatives)
    assert_parity(evaluator(st_model), theirs)
    assert_parity(evaluator(encoder), theirs, rel=TOLERANCE)
    assert evaluator.primary_metric == "cosine_accuracy"
    assert 0.5 < theirs["cosine_accuracy"] < 1.0


def test_mse_parity(st_model: Any, encoder: munjang.SentenceEncoder, en_ko: ParallelData) -> None:
    theirs = st_evaluation().MSEEvaluator(
        en_ko.sources, en_ko.targets, teacher_model=st_model, write_csv=False
    )(st_model)
    ours = MSEEvaluator.from_data(en_ko, encoder)(encoder)
    assert ours["negative_mse"] == pytest.approx(theirs["negative_mse"], abs=TOLERANCE)
    assert ours["mse"] == -ours["negative_mse"] > 0


def test_translation_parity(st_model: Any, encoder: munjang.SentenceEncoder, en_ko: ParallelData) -> None:
    sources = [*en_ko.sources, "A man is playing a flute.", "A woman is slicing an onion."]
    targets = [*en_ko.targets, "A man plays the flute.", "Someone is cutting an onion."]
    theirs = st_evaluation().TranslationEvaluator(sources, targets, write_csv=False)(st_model)
    evaluator = TranslationEvaluator(sources, targets)
    assert_parity(evaluator(st_model), theirs)
    assert_parity(evaluator(encoder), theirs, rel=TOLERANCE)


def test_sequential_with_sts(encoder: munjang.SentenceEncoder, stsb_pairs: Any) -> None:
    s1, s2, scores = stsb_pairs
    sts = STSEvaluator(s1, s2, scores, name="stsb")
    triplet = TripletEvaluator(s1[:-1], s2[:-1], s2[1:], name="triplet")
    metrics = SequentialEvaluator([sts, triplet])(encoder)
    assert metrics["stsb_spearman_cosine"] == pytest.approx(sts(encoder)["spearman_cosine"])
    assert "triplet_cosine_accuracy" in metrics


def test_label_accuracy_on_kornli_with_real_encoder(encoder: munjang.SentenceEncoder, data_dir: Path) -> None:
    data = read_nli(data_dir / "kornli" / "xnli.dev.ko.tsv")
    nli = NLIData(data.premises[:12], data.hypotheses[:12], data.labels[:12])
    torch.manual_seed(0)
    head = torch.nn.Linear(3 * 384, 3)

    def classifier(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return head(torch.cat([u, v, (u - v).abs()], dim=1))

    metrics = LabelAccuracyEvaluator.from_nli(nli, classifier, batch_size=5)(encoder)
    with torch.no_grad():
        u = encoder.encode(nli.premises, convert_to_tensor=True)
        v = encoder.encode(nli.hypotheses, convert_to_tensor=True)
        predicted = classifier(u, v).argmax(dim=1).numpy()
    assert metrics["accuracy"] == pytest.approx(float(np.mean(predicted == np.asarray(nli.labels))))
    assert metrics["macro_f1"] == pytest.approx(macro_f1(predicted, nli.labels))
