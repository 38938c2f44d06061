"""TripletLoss: an anchor should be closer to its positive than to its negative, by a margin.

    loss = mean_i max(d(a_i, p_i) − d(a_i, n_i) + ε, 0)

SBERT (Reimers & Gurevych, 2019) trained on the Wikipedia-sections triplets with euclidean
distance and margin ε = 1, which are the defaults here. Cosine (1 − cos) and manhattan (L1)
distances are available too; the margin must then be chosen for that distance's range.
"""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor

from ..encoders.dense.encoder import SentenceEncoder
from .base import SBERT_CITATION, SentenceLoss, distance_function


class TripletLoss(SentenceLoss):
    """`max(d(a, p) − d(a, n) + margin, 0)` over (anchor, positive, negative) columns; no labels."""

    min_columns = 3
    max_columns = 3
    label_kind = None
    citation = SBERT_CITATION

    def __init__(
        self, model: SentenceEncoder, distance_metric: str = "euclidean", triplet_margin: float = 1.0
    ) -> None:
        super().__init__(model)
        self.distance = distance_function(distance_metric)
        self.distance_metric = distance_metric
        self.triplet_margin = triplet_margin

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        self.check_columns(len(embeddings))
        anchor, positive, negative = embeddings
        losses = F.relu(
            self.distance(anchor, positive) - self.distance(anchor, negative) + self.triplet_margin
        )
        return losses.mean()

    def get_config_dict(self) -> dict[str, Any]:
        return {"distance_metric": self.distance_metric, "triplet_margin": self.triplet_margin}
