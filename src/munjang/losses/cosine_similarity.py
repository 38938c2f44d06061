"""CosineSimilarityLoss: regress the cosine similarity of a pair onto its gold score.

    loss = mean_i ( t(cos(u_i, v_i)) − y_i )²          (t: identity by default)

This is SBERT's regression objective for STS. Labels are expected in [0, 1], the range cosine
similarity is compared against: scale KorSTS / STS-B gold scores (0–5) by dividing by 5 first.
"""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor, nn

from ..encoders.dense.encoder import SentenceEncoder
from .base import SentenceLoss


class CosineSimilarityLoss(SentenceLoss):
    """`loss_fct(t(cos(u, v)), label)`: MSE against a [0, 1] similarity score by default."""

    def __init__(
        self,
        model: SentenceEncoder,
        loss_fct: nn.Module | None = None,
        cos_score_transformation: nn.Module | None = None,
    ) -> None:
        super().__init__(model)
        self.loss_fct = loss_fct if loss_fct is not None else nn.MSELoss()
        self.cos_score_transformation = (
            cos_score_transformation if cos_score_transformation is not None else nn.Identity()
        )

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        self.check_columns(len(embeddings))
        u, v = embeddings
        labels = self.check_labels(labels, u.shape[0])
        scores = self.cos_score_transformation(F.cosine_similarity(u, v, dim=-1))
        return self.loss_fct(scores, labels.to(device=scores.device, dtype=scores.dtype))

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "loss_fct": type(self.loss_fct).__name__,
            "cos_score_transformation": type(self.cos_score_transformation).__name__,
        }
