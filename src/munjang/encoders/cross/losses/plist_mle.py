"""PListMLELoss and ListMLELoss: the likelihood of the ideal ranking under the Plackett-Luce model.

    loss = mean_q  −Σ_i w_i · log( exp(s_(i)) / Σ_{j ≥ i} exp(s_(j)) )

with s_(i) the score of the document at rank i of the ideal order: the documents' input order by
default (`respect_input_order=True`, as in sentence-transformers: list the relevant ones first), or
the labels sorted high to low. PListMLE (Lan et al., 2014) weights rank i by 2^(n−i) − 1, normalised
over the list, so the top of the ranking counts most; ListMLE (Xia et al., 2008) weights all ranks
alike (w_i = 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from ..model import CrossEncoder
from .listwise import ListwiseLoss

EPS = 1e-10


class PListMLELambdaWeight(nn.Module):
    """Position weights 2^(n − rank) − 1 of each query's n documents (scaled down past 127 documents
    so the powers stay finite), zero on padding; `rank_discount_fn(mask)` replaces them."""

    def __init__(self, rank_discount_fn: Callable[[Tensor], Tensor] | None = None) -> None:
        super().__init__()
        self.rank_discount_fn = rank_discount_fn

    def forward(self, mask: Tensor) -> Tensor:
        if self.rank_discount_fn is not None:
            return self.rank_discount_fn(mask)
        count = mask.sum(dim=1, keepdim=True)
        ranks = torch.arange(1, mask.size(1) + 1, device=mask.device).expand_as(mask)
        scale = (count - 127).clamp_min(0)
        weights = torch.pow(2.0, count - ranks - scale) - torch.pow(2.0, -scale)
        return weights * mask


DEFAULT_WEIGHT = PListMLELambdaWeight()  # no parameters: one instance serves every loss


class PListMLELoss(ListwiseLoss):
    """Position-aware ListMLE; `lambda_weight=None` is plain ListMLE."""

    def __init__(
        self,
        model: CrossEncoder,
        lambda_weight: PListMLELambdaWeight | None = DEFAULT_WEIGHT,
        activation_fn: nn.Module | None = None,
        mini_batch_size: int | None = None,
        respect_input_order: bool = True,
    ) -> None:
        super().__init__(model, activation_fn, mini_batch_size)
        self.lambda_weight = lambda_weight
        self.respect_input_order = respect_input_order

    def list_loss(self, scores: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
        logits = self.place(scores, mask, 1e-16)
        if not self.respect_input_order:
            order = labels.float().masked_fill(~mask, float("-inf")).sort(descending=True, dim=1).indices
            logits, sorted_mask = torch.gather(logits, 1, order), torch.gather(mask, 1, order)
        else:
            sorted_mask = mask
        masked = logits.masked_fill(~sorted_mask, torch.finfo(logits.dtype).min)
        log_normalizers = torch.flip(torch.logcumsumexp(torch.flip(masked, [1]), dim=1), [1])
        log_probs = logits - log_normalizers
        if self.lambda_weight is not None:
            weight = self.lambda_weight(mask)
            log_probs = log_probs * (weight / (weight.sum(dim=1, keepdim=True) + EPS))
        log_probs = log_probs.masked_fill(~sorted_mask, 0.0)
        return -log_probs.sum(dim=1).mean()

    def get_config_dict(self) -> dict[str, Any]:
        weight = None if self.lambda_weight is None else type(self.lambda_weight).__name__
        return {
            **super().get_config_dict(),
            "lambda_weight": weight,
            "respect_input_order": self.respect_input_order,
        }


class ListMLELoss(PListMLELoss):
    """ListMLE: every rank weighs the same."""

    def __init__(
        self,
        model: CrossEncoder,
        activation_fn: nn.Module | None = None,
        mini_batch_size: int | None = None,
        respect_input_order: bool = True,
    ) -> None:
        super().__init__(model, None, activation_fn, mini_batch_size, respect_input_order)

    def get_config_dict(self) -> dict[str, Any]:
        config = super().get_config_dict()
        del config["lambda_weight"]
        return config
