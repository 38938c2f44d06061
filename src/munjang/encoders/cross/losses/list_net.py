"""ListNetLoss: the cross entropy between the softmax of a query's labels and the softmax of its scores.

    loss = mean_q  −Σ_d softmax(y_q)_d · log softmax(s_q)_d

over each query q's documents d only (padding gets probability 0 on both sides). Binary and graded
labels both work. As sentence-transformers' `ListNetLoss` (Cao et al., 2007).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from .listwise import ListwiseLoss


class ListNetLoss(ListwiseLoss):
    """ListNet (top-one probabilities) on a single-score cross-encoder."""

    def list_loss(self, scores: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
        logits = self.place(scores, mask, -1e16)
        targets = labels.float().masked_fill(~mask, float("-inf")).softmax(dim=1)
        return F.cross_entropy(logits, targets)
