"""CrossEncoderClassificationEvaluator: accuracy and F1 of pair classes (NLI) or binary relevance.

Several labels: the predicted class is argmax of the logits;
    accuracy = mean(ŷ_i = y_i),   f1_macro = mean over classes c of 2·P_c·R_c / (P_c + R_c)
One label (binary): a pair is positive when its activated score ≥ `threshold` (0.5 for a sigmoid);
    accuracy, precision, recall and f1 of the positive class, and average precision (threshold-free).
Primary metric: accuracy for several labels, average precision for one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .base import CrossEncoderEvaluator, SupportsPredict


def _f1(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def binary_average_precision(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the precision-recall curve as the mean precision at each positive (ties by score)."""
    positives = int(labels.sum())
    if positives == 0:
        raise ValueError("average precision needs at least one positive pair")
    order = np.argsort(-scores, kind="stable")
    sorted_scores, sorted_labels = scores[order], labels[order]
    # Step-wise AP as in scikit-learn: precision and recall at each distinct threshold.
    distinct = np.r_[np.flatnonzero(np.diff(sorted_scores)), len(scores) - 1]
    tps = np.cumsum(sorted_labels)[distinct]
    fps = (distinct + 1) - tps
    precision = tps / (tps + fps)
    recall = tps / positives
    recall_steps = np.diff(np.r_[0.0, recall])
    return float(np.sum(recall_steps * precision))


class CrossEncoderClassificationEvaluator(CrossEncoderEvaluator):
    """Classification metrics of a cross-encoder on labelled pairs."""

    def __init__(
        self,
        pairs: Sequence[tuple[str, str]],
        labels: Sequence[int],
        *,
        threshold: float = 0.5,
        name: str = "",
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
    ) -> None:
        super().__init__(name, batch_size, show_progress_bar, "accuracy")
        if len(pairs) != len(labels):
            raise ValueError(f"{len(pairs)} pairs but {len(labels)} labels")
        if not pairs:
            raise ValueError("no pairs to evaluate")
        self.pairs = [(a, b) for a, b in pairs]
        self.labels = np.asarray(labels, dtype=np.int64)
        self.threshold = threshold

    def __len__(self) -> int:
        return len(self.pairs)

    def __call__(self, model: SupportsPredict) -> dict[str, float]:
        scores = self.scores(model, self.pairs)
        if model.num_labels == 1:
            return self._binary(scores)
        return self._multiclass(scores, model.num_labels)

    def _binary(self, scores: np.ndarray) -> dict[str, float]:
        if not np.isin(self.labels, (0, 1)).all():
            raise ValueError("a single-score model needs binary labels (0 or 1)")
        self.primary_metric = "average_precision"
        predicted = scores >= self.threshold
        gold = self.labels.astype(bool)
        tp = int((predicted & gold).sum())
        fp = int((predicted & ~gold).sum())
        fn = int((~predicted & gold).sum())
        precision, recall, f1 = _f1(tp, fp, fn)
        return {
            "accuracy": float((predicted == gold).mean()),
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "average_precision": binary_average_precision(scores, self.labels),
        }

    def _multiclass(self, scores: np.ndarray, num_labels: int) -> dict[str, float]:
        if self.labels.min() < 0 or self.labels.max() >= num_labels:
            raise ValueError(f"labels must be class indices in [0, {num_labels - 1}]")
        self.primary_metric = "accuracy"
        predicted = scores.argmax(axis=1)
        f1s = []
        for c in range(num_labels):
            tp = int(((predicted == c) & (self.labels == c)).sum())
            fp = int(((predicted == c) & (self.labels != c)).sum())
            fn = int(((predicted != c) & (self.labels == c)).sum())
            f1s.append(_f1(tp, fp, fn)[2])
        return {"accuracy": float((predicted == self.labels).mean()), "f1_macro": float(np.mean(f1s))}

    def get_config_dict(self) -> dict[str, Any]:
        return {"threshold": self.threshold}
