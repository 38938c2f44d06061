"""BinaryClassificationEvaluator: how well a similarity threshold separates similar from dissimilar pairs."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..data.checks import check_same_length
from ..data.example import Example
from ..similarity import pairwise_similarity
from .base import SIMILARITY_FNS, Evaluator, SupportsEncode, check_similarity_fns, similarity_fns_to_compute

logger = logging.getLogger(__name__)

# Distances: a pair is predicted similar when its distance is at most the threshold.
DISTANCE_FNS = ("euclidean", "manhattan")


class F1Result(NamedTuple):
    """Best F1 over all thresholds, with the precision, recall and threshold that give it."""

    f1: float
    precision: float
    recall: float
    threshold: float


def _sorted_groups(
    scores: np.ndarray, labels: np.ndarray, greater_is_better: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys sorted best first, labels in that order, index of the last item of each tie group).

    Keys are the scores, negated when lower is better (distances), so the best pair always comes first.
    """
    keys = np.asarray(scores, dtype=np.float64) * (1.0 if greater_is_better else -1.0)
    order = np.argsort(-keys, kind="stable")
    keys, ordered = keys[order], np.asarray(labels, dtype=np.int64)[order]
    last = np.flatnonzero(np.append(keys[1:] != keys[:-1], True))
    return keys, ordered, last


def _threshold(keys: np.ndarray, i: int, greater_is_better: bool) -> float:
    """Midway between group end `i` and the next score (or the score itself at the end), in score units."""
    value = float(keys[i])
    if i + 1 < len(keys):
        middle = (value + float(keys[i + 1])) / 2
        if middle != float(keys[i + 1]):
            value = middle
    return value if greater_is_better else -value


def best_accuracy_threshold(
    scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray, greater_is_better: bool = True
) -> tuple[float, float]:
    """(best accuracy, threshold) for predicting "similar" when score >= threshold (<= for distances).

    Every cut between two distinct scores is tried, starting from the cut that predicts every pair
    dissimilar; the first cut reaching the best accuracy wins, placed midway between the scores it
    separates. The same search as sentence-transformers' ``find_best_acc_and_threshold``.
    """
    keys, y, last = _sorted_groups(np.asarray(scores), np.asarray(labels), greater_is_better)
    n, negatives = len(y), int((y == 0).sum())
    best_acc = negatives / n
    best = float(np.nextafter(keys[0], np.inf))
    best = best if greater_is_better else -best
    positives_above = np.cumsum(y)[last]
    negatives_above = np.cumsum(1 - y)[last]
    accuracy = (positives_above + (negatives - negatives_above)) / n
    top = int(np.argmax(accuracy))
    if accuracy[top] > best_acc:
        best_acc, best = float(accuracy[top]), _threshold(keys, int(last[top]), greater_is_better)
    return float(best_acc), best


def best_f1_threshold(
    scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray, greater_is_better: bool = True
) -> F1Result:
    """Best F1 of predicting "similar" when score >= threshold (<= for distances), over all cuts.

    precision = TP / (TP + FP), recall = TP / (TP + FN), F1 = 2 precision recall / (precision + recall).
    The first cut reaching the best F1 wins; all zeros (threshold 0) when no cut gives a true positive.
    The same search as sentence-transformers' ``find_best_f1_and_threshold``.
    """
    keys, y, last = _sorted_groups(np.asarray(scores), np.asarray(labels), greater_is_better)
    total_positives = int(y.sum())
    true_positives = np.cumsum(y)[last]
    extracted = last + 1
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = true_positives / extracted
        recall = true_positives / total_positives if total_positives else np.zeros(len(last))
        f1 = np.where(true_positives > 0, 2 * precision * recall / (precision + recall), 0.0)
    top = int(np.argmax(f1))
    if f1[top] <= 0:
        return F1Result(0.0, 0.0, 0.0, 0.0)
    return F1Result(
        float(f1[top]),
        float(precision[top]),
        float(recall[top]),
        _threshold(keys, int(last[top]), greater_is_better),
    )


def average_precision(
    scores: Sequence[float] | np.ndarray, labels: Sequence[int] | np.ndarray, greater_is_better: bool = True
) -> float:
    """Area under the step precision-recall curve, as scikit-learn's ``average_precision_score``.

    AP = sum_k (R_k - R_{k-1}) P_k over the distinct scores, best first, where P_k and R_k are the
    precision and recall of predicting "similar" for every pair scoring at least the k-th score (tied
    pairs enter together) and R_0 = 0. NaN when there is no positive pair.
    """
    _, y, last = _sorted_groups(np.asarray(scores), np.asarray(labels), greater_is_better)
    total_positives = int(y.sum())
    if total_positives == 0:
        return math.nan
    true_positives = np.cumsum(y)[last]
    precision = true_positives / (last + 1)
    recall = true_positives / total_positives
    return float(np.sum(np.diff(recall, prepend=0.0) * precision))


def matthews_correlation(predicted: np.ndarray, labels: np.ndarray) -> float:
    """MCC = (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)); 0 when a factor is 0."""
    predicted = np.asarray(predicted, dtype=bool)
    gold = np.asarray(labels, dtype=bool)
    tp = float(np.sum(predicted & gold))
    tn = float(np.sum(~predicted & ~gold))
    fp = float(np.sum(predicted & ~gold))
    fn = float(np.sum(~predicted & gold))
    denominator = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return (tp * tn - fp * fn) / denominator if denominator else 0.0


class BinaryClassificationEvaluator(Evaluator):
    """Pair classification (paraphrase / duplicate detection) by thresholding embedding similarity.

    For each similarity function f, the score of pair i is s_i = f(E(a_i), E(b_i)): cosine similarity
    or dot product (similar when s_i >= t), or the euclidean or manhattan *distance* (similar when
    s_i <= t; thresholds are reported as distances). With gold labels y_i in {0, 1}:

        {f}_accuracy, {f}_accuracy_threshold   best (1/n) sum_i [pred_i == y_i] over all thresholds t
        {f}_f1, {f}_precision, {f}_recall,     best F1 = 2PR / (P + R) over t, with the precision
        {f}_f1_threshold                       P = TP/(TP+FP) and recall R = TP/(TP+FN) at that t
        {f}_ap                                 average precision, sum_k (R_k - R_{k-1}) P_k
        {f}_mcc                                Matthews correlation at the F1 threshold

    Key names and threshold search follow sentence-transformers' ``BinaryClassificationEvaluator``
    (keys are not prefixed with `name`); it is computed with numpy only. `primary_metric` is
    ``<main_similarity>_ap``, or ``<encoder.similarity_fn_name>_ap`` when no main similarity was given.
    Each distinct sentence is encoded once.
    """

    optional_settings = ("main_similarity", "prompt_name", "prompt")

    def __init__(
        self,
        sentences1: Sequence[str],
        sentences2: Sequence[str],
        labels: Sequence[int],
        name: str = "",
        batch_size: int = 32,
        similarity_fns: Sequence[str] = SIMILARITY_FNS,
        main_similarity: str | None = None,
        prompt_name: str | None = None,
        prompt: str | None = None,
        show_progress_bar: bool | None = None,
    ) -> None:
        check_same_length(sentences1=sentences1, sentences2=sentences2, labels=labels)
        bad = next((x for x in labels if x not in (0, 1)), None)
        if bad is not None:
            raise ValueError(f"labels must be 0 (dissimilar) or 1 (similar), got {bad!r}")
        if not any(labels) or all(labels):
            raise ValueError("labels need at least one similar (1) and one dissimilar (0) pair")
        primary = f"{main_similarity}_ap" if main_similarity else None
        super().__init__(name, batch_size, prompt_name, prompt, show_progress_bar, primary)
        self.similarity_fns = check_similarity_fns(similarity_fns, main_similarity)
        self.sentences1 = list(sentences1)
        self.sentences2 = list(sentences2)
        self.labels = [int(x) for x in labels]
        self.main_similarity = main_similarity

    @classmethod
    def from_examples(cls, examples: Sequence[Example], **kwargs: Any) -> BinaryClassificationEvaluator:
        """An evaluator over ((a, b), 0 or 1) Examples."""
        bad = next((i for i, e in enumerate(examples) if len(e.texts) != 2), None)
        if bad is not None:
            raise ValueError(f"examples[{bad}] has {len(examples[bad].texts)} texts, a pair needs 2")
        labels = [e.label for e in examples]
        return cls([e.texts[0] for e in examples], [e.texts[1] for e in examples], labels, **kwargs)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self.labels)

    def __call__(self, encoder: SupportsEncode) -> dict[str, float]:
        """Encode the pairs and return the threshold metrics for each similarity function."""
        main, fns = similarity_fns_to_compute(encoder, self.similarity_fns, self.main_similarity)
        embeddings1, embeddings2 = self.encode_columns(encoder, self.sentences1, self.sentences2)
        labels = np.asarray(self.labels, dtype=np.int64)
        metrics: dict[str, float] = {}
        for fn in fns:
            similarities = np.asarray(pairwise_similarity(embeddings1, embeddings2, fn), dtype=np.float64)
            greater = fn not in DISTANCE_FNS
            scores = similarities if greater else -similarities
            accuracy, accuracy_threshold = best_accuracy_threshold(scores, labels, greater)
            f1 = best_f1_threshold(scores, labels, greater)
            predicted = scores >= f1.threshold if greater else scores <= f1.threshold
            metrics.update(
                {
                    f"{fn}_accuracy": accuracy,
                    f"{fn}_accuracy_threshold": accuracy_threshold,
                    f"{fn}_f1": f1.f1,
                    f"{fn}_precision": f1.precision,
                    f"{fn}_recall": f1.recall,
                    f"{fn}_f1_threshold": f1.threshold,
                    f"{fn}_ap": average_precision(scores, labels, greater),
                    f"{fn}_mcc": matthews_correlation(predicted, labels),
                }
            )
            logger.info(
                "Binary classification %s %s: accuracy %.4f, F1 %.4f, AP %.4f",
                self.name or "evaluation",
                fn,
                accuracy,
                f1.f1,
                metrics[f"{fn}_ap"],
            )
        self.primary_metric = f"{main}_ap"
        return metrics

    def _settings(self) -> dict[str, Any]:
        return {"similarity_fns": list(self.similarity_fns)}

    def _describe(self) -> str:
        return f"{len(self)} pairs, similarity_fns={list(self.similarity_fns)}"
