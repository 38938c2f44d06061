"""ContrastiveLoss (Hadsell, Chopra & LeCun, 2006) for labelled pairs.

    loss_i = ½ · ( y_i · d(u_i, v_i)² + (1 − y_i) · max(m − d(u_i, v_i), 0)² )

averaged over the batch (or summed with `size_average=False`); d is cosine distance (1 − cos)
by default, m the margin.

Label convention: y = 1 marks a SIMILAR pair (pulled together), y = 0 a DISSIMILAR pair (pushed
at least m apart). This is the sentence-transformers convention, and munjang follows it. Some
texts use the opposite one — Hadsell et al. write Y = 0 for similar pairs and Y = 1 for
dissimilar ones — so data prepared for such a formulation must have its labels flipped.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch.nn.functional as F
from torch import Tensor

from ..encoders.dense.encoder import SentenceEncoder
from .base import SentenceLoss, distance_function

HADSELL_CITATION = """@inproceedings{hadsell2006dimensionality,
    author={Hadsell, R. and Chopra, S. and LeCun, Y.},
    booktitle={2006 IEEE Computer Society Conference on Computer Vision and Pattern Recognition (CVPR'06)},
    title={Dimensionality Reduction by Learning an Invariant Mapping},
    year={2006},
    volume={2},
    pages={1735-1742},
    doi={10.1109/CVPR.2006.100}
}"""


def warn_if_not_binary(loss_name: str, labels: Tensor) -> None:
    """Warn once per loss object when pair labels are not all 0 or 1."""
    if bool(labels.ne(0).logical_and(labels.ne(1)).any()):
        warnings.warn(
            f"{loss_name} expects labels 1 (similar pair) or 0 (dissimilar pair); got other values",
            UserWarning,
            stacklevel=4,
        )


class PairDistanceLoss(SentenceLoss):
    """Shared by the contrastive losses: (u, v) pairs with a 0/1 label and a distance metric."""

    def __init__(self, model: SentenceEncoder, distance_metric: str, margin: float) -> None:
        super().__init__(model)
        self.distance = distance_function(distance_metric)
        self.distance_metric = distance_metric
        self.margin = margin
        self._labels_checked = False

    def pair_distances(self, embeddings: list[Tensor], labels: Tensor | None) -> tuple[Tensor, Tensor]:
        """Distances of the (u, v) pairs and their 0/1 labels (warning once if labels are not binary)."""
        self.check_columns(len(embeddings))
        u, v = embeddings
        labels = self.check_labels(labels, u.shape[0]).to(u.device)
        if not self._labels_checked:
            self._labels_checked = True
            warn_if_not_binary(type(self).__name__, labels)
        return self.distance(u, v), labels


class ContrastiveLoss(PairDistanceLoss):
    """Pull pairs labelled 1 (similar) together, push pairs labelled 0 (dissimilar) past `margin`."""

    citation = HADSELL_CITATION

    def __init__(
        self,
        model: SentenceEncoder,
        distance_metric: str = "cosine",
        margin: float = 0.5,
        size_average: bool = True,
    ) -> None:
        super().__init__(model, distance_metric, margin)
        self.size_average = size_average

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        distances, labels = self.pair_distances(embeddings, labels)
        y = labels.to(distances.dtype)
        losses = 0.5 * (y * distances.pow(2) + (1 - y) * F.relu(self.margin - distances).pow(2))
        return losses.mean() if self.size_average else losses.sum()

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "distance_metric": self.distance_metric,
            "margin": self.margin,
            "size_average": self.size_average,
        }
