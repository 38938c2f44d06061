"""MSELoss: regression of a pair's score onto a gold value (KorSTS score / 5, or a teacher's score).

    loss = mean_i  (a(z_i) − y_i)²

with z_i the pair's logit and a the activation: identity by default (the logit itself regresses to
y), or the model's sigmoid with `activation="model"` so that `predict` returns what was trained.
"""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn

from ..model import CrossEncoder
from .base import CrossEncoderLoss


class MSELoss(CrossEncoderLoss):
    """Mean squared error between the (activated) logit and the label."""

    def __init__(self, model: CrossEncoder, activation: str = "identity") -> None:
        super().__init__(model)
        self._single_score()
        if activation not in ("identity", "model"):
            raise ValueError(f"activation must be 'identity' or 'model', not {activation!r}")
        self.activation_choice = activation

    def compute_from_logits(self, logits: Tensor, labels: Tensor) -> Tensor:
        act: nn.Module = self.model.activation if self.activation_choice == "model" else nn.Identity()
        return F.mse_loss(act(logits.view(-1).float()), labels.float().view(-1))

    def get_config_dict(self) -> dict[str, Any]:
        return {"activation": self.activation_choice}
