"""BinaryCrossEntropyLoss: relevance (or a similarity in [0, 1]) learned from one logit per pair.

    loss = mean_i  −[ w·y_i · log σ(z_i) + (1 − y_i) · log(1 − σ(z_i)) ]

with z_i the pair's logit, y_i ∈ [0, 1] the label (1 relevant, 0 not; soft labels such as an STS
score / 5 also work) and w = `pos_weight` (raise it when negatives outnumber positives, e.g. with
mined hard negatives). The SBERT cross-encoders were trained on STSb this way; `predict` then
applies the sigmoid.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..model import CrossEncoder
from .base import CrossEncoderLoss


class BinaryCrossEntropyLoss(CrossEncoderLoss):
    """BCE-with-logits on a single-score cross-encoder."""

    def __init__(self, model: CrossEncoder, pos_weight: float | None = None) -> None:
        super().__init__(model)
        self._single_score()
        if pos_weight is not None and pos_weight <= 0:
            raise ValueError(f"pos_weight must be positive, not {pos_weight}")
        self.pos_weight = pos_weight

    def compute_from_logits(self, logits: Tensor, labels: Tensor) -> Tensor:
        targets = labels.float().view(-1)
        if torch.any((targets < 0) | (targets > 1)):
            raise ValueError("BinaryCrossEntropyLoss labels must lie in [0, 1]")
        weight = None if self.pos_weight is None else torch.tensor(self.pos_weight, device=logits.device)
        return F.binary_cross_entropy_with_logits(logits.view(-1).float(), targets, pos_weight=weight)

    def get_config_dict(self) -> dict[str, Any]:
        return {"pos_weight": self.pos_weight}
