"""MaxSim in-batch negatives (MNRL over late-interaction scores), the ColBERT training objective.

For query i, its document is the positive and every other document of the batch (and each hard
negative column) a negative:

    loss = mean_i  CE( scale * [maxsim(q_i, d_j)]_j ,  i )

The scale is 1 by default (as PyLate and sentence-transformers' MultiVectorMultipleNegativesRankingLoss):
MaxSim already sums over the query's tokens, so its range is wide.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .encoder import MultiVectorEncoder
from .maxsim import maxsim_padded


class MaxSimRankingLoss(nn.Module):
    """In-batch negatives over MaxSim scores for (query, positive[, negative...]) text columns."""

    def __init__(self, model: MultiVectorEncoder, scale: float = 1.0) -> None:
        super().__init__()
        if not scale > 0:
            raise ValueError(f"scale must be positive, not {scale}")
        self.model, self.scale = model, scale

    def scores(self, columns: Sequence[Sequence[str]]) -> torch.Tensor:
        """(queries, all documents) MaxSim matrix: the positives first, then each negative column."""
        if len(columns) < 2:
            raise ValueError("MaxSimRankingLoss needs a query column and at least one document column")
        queries = self.model.tokenize(columns[0], "query")
        q = self.model(queries)
        q_mask = queries["score_mask"].to(q.device)
        docs = [text for column in columns[1:] for text in column]
        batch = self.model.tokenize(docs, "document")
        d = self.model(batch)
        return maxsim_padded(q, q_mask, d, batch["score_mask"].to(d.device))

    def forward(self, columns: Sequence[Sequence[str]]) -> torch.Tensor:
        scores = self.scores(columns) * self.scale
        labels = torch.arange(scores.shape[0], device=scores.device)
        return F.cross_entropy(scores, labels)
