"""GradCache (Gao et al., 2021): a contrastive loss over a large batch with the memory of a small one.

An in-batch-negatives loss needs every embedding of the batch at once, but its gradient with
respect to the model only flows through each embedding. So the batch is embedded in three steps:

1. every column, `mini_batch_size` rows at a time, **without** an autograd graph, keeping the random
   state (dropout) each mini-batch started from;
2. the loss on the whole batch's embeddings (detached leaves), and its gradient g = ∂loss/∂e with
   respect to each embedding, which is cached;
3. when the trainer back-propagates the returned loss, a hook re-embeds each mini-batch **with** a
   graph, replaying its random state so dropout draws the same masks, and back-propagates the
   surrogate ⟨e_mb, g_mb⟩ · grad_output, whose gradient is exactly the mini-batch's share of
   ∂loss/∂θ (scaled as the trainer scaled the loss: gradient accumulation, mixed precision).

Only one mini-batch's activations are alive at a time; the cost is a second forward pass. The
trainer needs no special case: it calls `backward()` on the loss as for any other loss.

Runs on one process: the replay happens inside backward, where DDP's gradient hooks would see the
parameters used a second time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor
from torch.utils.checkpoint import get_device_states, set_device_states

from ..encoders.dense.encoder import SentenceEncoder
from .distributed import rank_and_world

GRADCACHE_CITATION = """@misc{gao2021scaling,
    title={Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup},
    author={Luyu Gao and Yunyi Zhang and Jiawei Han and Jamie Callan},
    year={2021},
    eprint={2101.06983},
    archivePrefix={arXiv},
    primaryClass={cs.LG}
}"""


class RandomState:
    """The CPU and accelerator random states at one moment, to run a forward pass again from them."""

    def __init__(self, tensors: Sequence[Any]) -> None:
        self.cpu = torch.get_rng_state()
        self.devices, self.device_states = get_device_states(*tensors)

    @contextmanager
    def replay(self) -> Iterator[None]:
        """Run the block from the recorded states; the states outside are restored afterwards."""
        with torch.random.fork_rng(devices=self.devices):
            torch.set_rng_state(self.cpu)
            set_device_states(self.devices, self.device_states)
            yield


def check_model(model: SentenceEncoder, loss_name: str, mini_batch_size: int) -> None:
    """Reject what a cached loss cannot split into mini-batches, or a mini-batch size below 1."""
    if isinstance(mini_batch_size, bool) or not isinstance(mini_batch_size, int) or mini_batch_size < 1:
        raise ValueError(f"mini_batch_size must be a whole number of at least 1, not {mini_batch_size!r}")
    if getattr(model, "static", None) is not None:
        raise ValueError(
            f"{loss_name} cannot split a static model's inputs into mini-batches; use the loss without "
            "caching (a static model is cheap to train with large batches anyway)"
        )


def batch_size(features: dict[str, Any]) -> int:
    """The number of rows of a tokenized column."""
    for key in ("input_ids", "attention_mask"):
        if isinstance(features.get(key), Tensor):
            return int(features[key].shape[0])
    return next(int(v.shape[0]) for v in features.values() if isinstance(v, Tensor) and v.dim() > 0)


def minibatch_features(features: dict[str, Any], begin: int, end: int) -> dict[str, Any]:
    """Rows begin:end of a tokenized column, without the padding columns none of them uses.

    A new dict each call (modules write their outputs into the features they are given).
    """
    rows = batch_size(features)
    mask = features.get("attention_mask")
    width, keep = 0, 0  # trim the token axis from `width` columns to `keep` (0: no trimming)
    if isinstance(mask, Tensor) and mask.dim() == 2:
        used = mask[begin:end].bool().any(dim=0).nonzero()
        if used.numel() and int(used.max()) + 1 < mask.shape[1]:
            width, keep = int(mask.shape[1]), int(used.max()) + 1
    out: dict[str, Any] = {}
    for key, value in features.items():
        if isinstance(value, Tensor) and value.dim() > 0 and value.shape[0] == rows:
            value = value[begin:end]
            if keep and value.dim() >= 2 and value.shape[1] == width:
                value = value[:, :keep]
        out[key] = value
    return out


def minibatch_ranges(rows: int, size: int) -> list[tuple[int, int]]:
    """(begin, end) of each mini-batch of `size` rows (the last may be shorter)."""
    return [(begin, min(begin + size, rows)) for begin in range(0, rows, size)]


def embed_without_graph(
    model: SentenceEncoder, features: dict[str, Any], ranges: Sequence[tuple[int, int]], record: bool
) -> tuple[Tensor, list[RandomState | None]]:
    """A column's embeddings, mini-batch by mini-batch, with no autograd graph; and, with `record`,
    the random state each mini-batch started from."""
    parts, states = [], []
    with torch.no_grad():
        for begin, end in ranges:
            batch = minibatch_features(features, begin, end)
            states.append(RandomState(list(batch.values())) if record else None)
            parts.append(model(batch)["sentence_embedding"])
    return torch.cat(parts), states


def cached_loss(
    model: SentenceEncoder,
    sentence_features: Sequence[dict[str, Any]],
    mini_batch_size: int,
    compute: Callable[[list[Tensor]], Tensor],
) -> Tensor:
    """`compute(embeddings)` for the batch, with gradients to the model through GradCache.

    `compute` maps one (batch, dim) embedding tensor per column to the scalar loss. Without
    gradients (evaluation) only the first step runs. See the module docstring for the steps.
    """
    device = model.device
    features = [
        {k: v.to(device) if isinstance(v, Tensor) else v for k, v in f.items()} for f in sentence_features
    ]
    ranges = [minibatch_ranges(batch_size(f), mini_batch_size) for f in features]
    training = torch.is_grad_enabled()
    if training and rank_and_world()[1] > 1:
        raise ValueError(
            "the cached losses run on one process; with several, use MultipleNegativesRankingLoss "
            "(its negatives span every process)"
        )
    embedded = [embed_without_graph(model, f, r, training) for f, r in zip(features, ranges, strict=True)]
    if not training:
        return compute([e for e, _ in embedded])
    leaves = [e.detach().requires_grad_() for e, _ in embedded]
    loss = compute(leaves)
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    cache = [g.detach() if g is not None else None for g in grads]
    states = [s for _, s in embedded]
    result = loss.detach().requires_grad_()

    def replay(grad_output: Tensor) -> None:
        with torch.enable_grad():
            for column, column_ranges, column_states, grad in zip(
                features, ranges, states, cache, strict=True
            ):
                if grad is None:  # the loss did not read this column
                    continue
                for (begin, end), state in zip(column_ranges, column_states, strict=True):
                    assert state is not None
                    with state.replay():
                        rows = model(minibatch_features(column, begin, end))["sentence_embedding"]
                    dtype = torch.promote_types(rows.dtype, grad.dtype)  # bf16 / fp16 rows: fp32 sums
                    dtype = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
                    surrogate = (rows.to(dtype) * grad[begin:end].to(dtype)).sum() * grad_output
                    surrogate.backward()

    result.register_hook(replay)
    return result
