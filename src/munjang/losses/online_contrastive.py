"""OnlineContrastiveLoss: the contrastive loss over the hard pairs of a batch only.

With d the distance (cosine distance 1 − cos by default) and m the margin, a positive pair is
hard when it is farther apart than the closest negative pair, and a negative pair is hard when it
is closer than the farthest positive pair. The loss sums over the hard pairs only:

    loss = Σ_{hard positives} d² + Σ_{hard negatives} max(m − d, 0)²

(with no negatives in the batch, positives farther than the positives' mean distance count as
hard, and likewise for negatives). It is a sum, not a mean, as in sentence-transformers.

Label convention: y = 1 marks a SIMILAR pair, y = 0 a DISSIMILAR pair (the sentence-transformers
convention, which munjang follows; Hadsell et al. use the opposite, Y = 0 for similar).
"""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor

from ..encoders.dense.encoder import SentenceEncoder
from .contrastive import PairDistanceLoss


class OnlineContrastiveLoss(PairDistanceLoss):
    """Contrastive loss on hard positives (label 1) and hard negatives (label 0) of the batch."""

    def __init__(self, model: SentenceEncoder, distance_metric: str = "cosine", margin: float = 0.5) -> None:
        super().__init__(model, distance_metric, margin)

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        distances, labels = self.pair_distances(embeddings, labels)
        negatives = distances[labels == 0]
        positives = distances[labels == 1]
        hard_negatives = negatives[negatives < (positives.max() if len(positives) else negatives.mean())]
        hard_positives = positives[positives > (negatives.min() if len(negatives) else positives.mean())]
        return hard_positives.pow(2).sum() + F.relu(self.margin - hard_negatives).pow(2).sum()

    def get_config_dict(self) -> dict[str, Any]:
        return {"distance_metric": self.distance_metric, "margin": self.margin}
