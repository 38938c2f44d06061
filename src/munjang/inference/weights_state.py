"""When a model's weights last changed, for what is built from them (fused torch weights, exported graphs).

Torch's tensor version counters see in-place edits such as `copy_` and `load_state_dict`, but not the
fused optimizers (`AdamW(fused=True)`, which munjang's trainer uses): they write the weights without
bumping the counters. A cache keyed on the counters alone would keep serving the weights from before
training. So every optimizer step is also counted, through torch's global step hook, on each
parameter it updated, and in one process-wide generation number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

_STEPS = "_munjang_optimizer_steps"
_generation = 0


def _count_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    global _generation
    _generation += 1
    for group in optimizer.param_groups:
        for p in group["params"]:
            setattr(p, _STEPS, getattr(p, _STEPS, 0) + 1)


register_optimizer_step_post_hook(_count_step)


def weights_state(params: Sequence[torch.Tensor]) -> tuple[tuple[int, int, int], ...]:
    """Equal for two calls only if no parameter was edited in place, stepped or moved in between."""
    return tuple((p._version, getattr(p, _STEPS, 0), p.data_ptr()) for p in params)


def optimizer_generation() -> int:
    """How many optimizer steps this process has taken, of any optimizer (a cheap first check)."""
    return _generation
