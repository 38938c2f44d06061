"""What the listwise cross-encoder losses share: a query's documents scored as pairs, then one loss per list.

Data: `ListwiseExample(query, documents, labels)`, the documents of a batch's examples in any number.
`listwise_batch` flattens a batch into the (query, document) pair columns that
`model.training_features` tokenizes, in query order then document order, and the labels into a
(queries, longest list) matrix padded with NaN: the NaN cells are the padding the losses mask out.
The trainer does this by itself; call it to use a loss directly.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from ....data.example import ListwiseExample
from ..model import CrossEncoder
from .base import CrossEncoderLoss


def listwise_batch(examples: Sequence[ListwiseExample]) -> tuple[list[list[str]], Tensor]:
    """The pair columns [queries, documents] of a batch, and its NaN-padded (queries, longest) labels."""
    if not examples:
        raise ValueError("an empty batch of listwise examples")
    queries = [ex.query for ex in examples for _ in ex.documents]
    documents = [doc for ex in examples for doc in ex.documents]
    longest = max(len(ex.documents) for ex in examples)
    labels = torch.full((len(examples), longest), float("nan"))
    for row, ex in enumerate(examples):
        labels[row, : len(ex.labels)] = torch.tensor(ex.labels, dtype=torch.float32)
    return [queries, documents], labels


class ListwiseLoss(CrossEncoderLoss):
    """Base of the listwise losses: scores of every (query, document) pair, placed in a padded matrix.

    `activation_fn` is applied to the logits first (identity by default, as in sentence-transformers);
    `mini_batch_size` pairs go through the model per forward pass: None -> as many as there are queries
    in the batch, <= 0 -> all pairs in one pass (sentence-transformers' convention).
    """

    def __init__(
        self, model: CrossEncoder, activation_fn: nn.Module | None = None, mini_batch_size: int | None = None
    ) -> None:
        super().__init__(model)
        self._single_score()
        self.activation_fn = activation_fn or nn.Identity()
        self.mini_batch_size = mini_batch_size

    def forward(self, features: Sequence[dict[str, Any]], labels: Tensor | None) -> Tensor:
        """The mean loss over the batch's queries; `labels` is `listwise_batch`'s padded matrix."""
        name = type(self).__name__
        if len(features) != 1:
            raise ValueError(
                f"{name} takes one batch of (query, document) pairs, got {len(features)} batches"
            )
        if labels is None or labels.ndim != 2:
            raise ValueError(
                f"{name} needs a (queries, documents) label matrix: train it on ListwiseExample data"
            )
        mask = ~torch.isnan(labels)
        if not bool(torch.all(mask[:, :1])) or bool(torch.any(mask[:, 1:] & ~mask[:, :-1])):
            raise ValueError(f"{name}: each row of labels is a query's documents first, then NaN padding")
        size = self.mini_batch_size if self.mini_batch_size is not None else labels.shape[0]
        logits = self.pair_logits(features[0], size if size > 0 else 0)
        pairs = int(mask.sum())
        if logits.shape[0] != pairs:
            raise ValueError(f"{name} expects {pairs} (query, document) pairs, got {logits.shape[0]}")
        return self.compute_from_logits(logits, labels.to(logits.device))

    def compute_from_logits(self, logits: Tensor, labels: Tensor) -> Tensor:
        mask = ~torch.isnan(labels)
        scores = self.activation_fn(logits.view(-1).float())
        return self.list_loss(scores, labels, mask)

    @abstractmethod
    def list_loss(self, scores: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
        """The loss from the pairs' scores (row-major over `mask`), the labels and the documents' mask."""

    @staticmethod
    def place(scores: Tensor, mask: Tensor, fill: float) -> Tensor:
        """The scores as a (queries, longest) matrix, `fill` in the padding."""
        matrix = torch.full(mask.shape, fill, device=scores.device, dtype=scores.dtype)
        matrix[mask] = scores
        return matrix

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "activation_fn": type(self.activation_fn).__name__,
            "mini_batch_size": self.mini_batch_size,
        }
