"""CrossEntropyLoss: classes of a pair (NLI: entailment / neutral / contradiction) from `num_labels` logits.

    loss = mean_i  −log softmax(z_i)[y_i]

with z_i the pair's logits and y_i its class index. `predict(..., apply_softmax=True)` gives the
class probabilities afterwards.
"""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor

from ..model import CrossEncoder
from .base import CrossEncoderLoss


class CrossEntropyLoss(CrossEncoderLoss):
    """Softmax cross-entropy over the model's `num_labels` classes."""

    def __init__(self, model: CrossEncoder, label_smoothing: float = 0.0) -> None:
        super().__init__(model)
        if model.num_labels < 2:
            raise ValueError(
                "CrossEntropyLoss needs a model with at least 2 labels; use BinaryCrossEntropyLoss"
            )
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), not {label_smoothing}")
        self.label_smoothing = label_smoothing

    def compute_from_logits(self, logits: Tensor, labels: Tensor) -> Tensor:
        classes = labels.view(-1).long()
        if classes.numel() and (int(classes.min()) < 0 or int(classes.max()) >= logits.shape[1]):
            raise ValueError(f"CrossEntropyLoss labels must be class indices in [0, {logits.shape[1] - 1}]")
        return F.cross_entropy(logits.float(), classes, label_smoothing=self.label_smoothing)

    def get_config_dict(self) -> dict[str, Any]:
        return {"num_labels": self.model.num_labels, "label_smoothing": self.label_smoothing}
