"""What the cross-encoder losses share: one forward pass over the pair batch, then a loss on the logits.

Calling convention (as for the bi-encoder losses, so the same trainer calls both):
`loss(features, labels)`, where `features == model.training_features([firsts, seconds])` is a list
holding one padded batch of pairs and `labels` has one entry per pair.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from ..model import CrossEncoder


class CrossEncoderLoss(nn.Module, ABC):
    """Base of the cross-encoder losses: logits of the batch, then `compute_from_logits`."""

    def __init__(self, model: CrossEncoder) -> None:
        super().__init__()
        self.model = model

    def forward(self, features: Sequence[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """The scalar loss of one batch of pairs."""
        if len(features) != 1:
            raise ValueError(f"{type(self).__name__} takes one batch of pairs, got {len(features)} batches")
        if labels is None:
            raise ValueError(f"{type(self).__name__} needs labels, got None")
        logits = self.pair_logits(features[0])
        if labels.shape[0] != logits.shape[0]:
            raise ValueError(
                f"{type(self).__name__} expects {logits.shape[0]} labels (one per pair), "
                f"got {labels.shape[0]}"
            )
        return self.compute_from_logits(logits, labels.to(logits.device))

    def pair_logits(self, batch: dict[str, Any], mini_batch_size: int = 0) -> Tensor:
        """(pairs, num_labels) logits of one padded batch; `mini_batch_size > 0` runs that many rows
        per forward pass (the graph of every pass is kept for the one backward)."""
        device = self.model.device
        batch = {k: v.to(device) if isinstance(v, Tensor) else v for k, v in batch.items()}
        rows = int(batch["input_ids"].shape[0])
        if mini_batch_size <= 0 or mini_batch_size >= rows:
            return self.model(batch)["scores"]
        parts = []
        for start in range(0, rows, mini_batch_size):
            part = {
                k: v[start : start + mini_batch_size]
                if isinstance(v, Tensor) and v.shape[:1] == (rows,)
                else v
                for k, v in batch.items()
            }
            parts.append(self.model(part)["scores"])
        return torch.cat(parts, dim=0)

    @abstractmethod
    def compute_from_logits(self, logits: Tensor, labels: Tensor) -> Tensor:
        """The loss from (batch, num_labels) logits and one label per pair."""

    def get_config_dict(self) -> dict[str, Any]:
        """The settings that change the loss (for model cards)."""
        return {}

    def _single_score(self) -> None:
        if self.model.num_labels != 1:
            raise ValueError(
                f"{type(self).__name__} needs a model with one output score, "
                f"this one has {self.model.num_labels} labels"
            )
