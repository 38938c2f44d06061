"""Gathering rows across the processes of a `torch.distributed` group, with gradients.

A loss that wants the global batch (MultipleNegativesRankingLoss's in-batch negatives) gathers its
embeddings with `all_gather_with_grad`. Forward: every rank's rows, concatenated in rank order (the
ranks may hold different numbers of rows). Backward: the gradients of the gathered tensor are summed
over the ranks (all-reduce) and each rank keeps the slice of its own rows, so a rank's embeddings
receive the gradient of the sum of every rank's loss with respect to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor


def rank_and_world() -> tuple[int, int]:
    """(rank, world size) of the default process group; (0, 1) when none is initialised."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


@dataclass(frozen=True)
class Gathered:
    """Rows of every rank in rank order, and where this rank's rows sit among them."""

    rows: Tensor
    offset: int
    local: int

    @property
    def total(self) -> int:
        """The number of rows over all ranks."""
        return int(self.rows.shape[0])


class _AllGather(torch.autograd.Function):
    """All-gather along dim 0 (sizes may differ per rank); backward: all-reduce(sum), own slice."""

    @staticmethod
    def forward(ctx: Any, tensor: Tensor, sizes: list[int], rank: int) -> Tensor:
        ctx.sizes, ctx.rank = sizes, rank
        longest = max(sizes)
        padded = tensor.contiguous()
        if tensor.shape[0] < longest:
            filler = tensor.new_zeros((longest - tensor.shape[0], *tensor.shape[1:]))
            padded = torch.cat([padded, filler])
        parts = [torch.empty_like(padded) for _ in sizes]
        dist.all_gather(parts, padded)
        return torch.cat([part[:size] for part, size in zip(parts, sizes, strict=True)])

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None]:
        summed = grad.contiguous().clone()
        dist.all_reduce(summed, op=dist.ReduceOp.SUM)
        start = sum(ctx.sizes[: ctx.rank])
        return summed[start : start + ctx.sizes[ctx.rank]], None, None


def all_gather_with_grad(tensor: Tensor) -> Gathered:
    """Concatenate `tensor` (rows along dim 0) from every rank of the default process group.

    Collective: every rank must call it, with tensors that agree on every dimension but the first.
    Without a process group (or with one process) the tensor comes back as it is. The result keeps
    the autograd graph: gradients reaching another rank's rows are sent back to that rank.
    """
    rank, world = rank_and_world()
    local = int(tensor.shape[0])
    if world == 1:
        return Gathered(tensor, 0, local)
    counts = [torch.zeros(1, dtype=torch.long, device=tensor.device) for _ in range(world)]
    dist.all_gather(counts, torch.tensor([local], dtype=torch.long, device=tensor.device))
    sizes = [int(c.item()) for c in counts]
    rows = _AllGather.apply(tensor, sizes, rank)
    return Gathered(rows, sum(sizes[:rank]), local)
