"""Changing a loaded pipeline's modules: a different pooling than the model folder's."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .base import Module
from .dense import Dense
from .pooling import Pooling
from .transformer import Transformer


def replace_pooling(modules: Iterable[Module], pooling: str | Sequence[str]) -> list[Module]:
    """The pipeline with its Pooling replaced by one of the given mode(s), or one added after the
    Transformer; a Dense layer that would no longer fit the pooled size is an error naming both."""
    out: list[Module] = []
    replaced = False
    for module in modules:
        if isinstance(module, Pooling):
            module = Pooling(module.embedding_dimension, pooling, include_prompt=module.include_prompt)
            replaced = True
        out.append(module)
    if not replaced:
        transformer = out[0]
        assert isinstance(transformer, Transformer)
        out.insert(1, Pooling(transformer.hidden_size, pooling))
    dim = 0
    for module in out:
        if isinstance(module, Pooling):
            dim = module.output_dimension
        elif isinstance(module, Dense) and module.in_features != dim:
            raise ValueError(
                f"pooling {pooling!r} gives {dim}-dim vectors but the model's Dense layer expects "
                f"{module.in_features}; keep the model's own pooling"
            )
    return out
