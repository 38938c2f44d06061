"""A compact training loop for a ColBERT: MaxSim in-batch negatives over (query, document) pairs.

AdamW with a linear warm-up and decay; the projection (new, random) learns at its own, higher rate
than the pretrained backbone. Batches never hold the same document twice (positives and hard negatives
alike), so no in-batch "negative" is a copy of some query's positive.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from .encoder import MultiVectorEncoder
from .loss import MaxSimRankingLoss


@dataclass
class FitOptions:
    batch_size: int = 32
    steps: int = 300
    lr: float = 3e-5
    projection_lr: float = 1e-3
    warmup: int = 20
    scale: float = 1.0
    max_seconds: float | None = None  # stop early once training has run this long
    seed: int = 0


def batches(pairs: Sequence[tuple[str, ...]], batch_size: int, seed: int) -> list[list[tuple[str, ...]]]:
    """Shuffled batches in which no document text (any column after the query) appears twice (an epoch;
    short last batch dropped)."""
    order = list(pairs)
    random.Random(seed).shuffle(order)
    out: list[list[tuple[str, ...]]] = []
    current: list[tuple[str, ...]] = []
    seen: set[str] = set()
    for pair in order:
        documents = set(pair[1:])
        if len(documents) < len(pair) - 1 or documents & seen:
            continue
        current.append(pair)
        seen |= documents
        if len(current) == batch_size:
            out.append(current)
            current, seen = [], set()
    return out


def fit_colbert(
    model: MultiVectorEncoder,
    pairs: Sequence[tuple[str, ...]],
    options: FitOptions | None = None,
    log: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Train `model` in place on (query, document[, hard negative]) tuples; returns the loss per step."""
    opts = options or FitOptions()
    if not pairs:
        raise ValueError("no training pairs")
    loss_fn = MaxSimRankingLoss(model, scale=opts.scale)
    # Frozen parameters (requires_grad False, e.g. the word embeddings) stay out of the optimizer.
    backbone = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("projection.")]
    groups = [{"params": backbone, "lr": opts.lr}]
    if model.projection is not None:
        groups.append({"params": list(model.projection.parameters()), "lr": opts.projection_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=0.01)

    def factor(step: int) -> float:
        if step < opts.warmup:
            return (step + 1) / opts.warmup
        return max(0.0, (opts.steps - step) / max(1, opts.steps - opts.warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    losses: list[float] = []
    start, epoch = time.perf_counter(), 0
    model.train()
    try:
        while len(losses) < opts.steps:
            epoch_batches = batches(pairs, opts.batch_size, opts.seed + epoch)
            if not epoch_batches:
                raise ValueError(f"fewer than batch_size={opts.batch_size} distinct documents to train on")
            for batch in epoch_batches:
                columns = [list(column) for column in zip(*batch, strict=True)]
                loss = loss_fn(columns)
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
                optimizer.step()
                scheduler.step()
                losses.append(float(loss.detach()))
                if log is not None:
                    log(len(losses), losses[-1])
                over_time = opts.max_seconds is not None and time.perf_counter() - start > opts.max_seconds
                if len(losses) >= opts.steps or over_time:
                    return losses
            epoch += 1
    finally:
        model.eval()
    return losses
