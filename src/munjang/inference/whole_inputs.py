"""Encoding with an input module that needs no token budget: a static model's embedding bags, or a CLIP
model's texts and images. Each picks its own default batch size."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..modules.base import Module
from ..modules.clip import CLIPModel
from ..modules.static_embedding import StaticEmbedding
from .clip_encode import CLIP_BATCH, encode_clip
from .static_bag import STATIC_BATCH, encode_bags


def encode_whole(
    pipeline: Callable[[dict[str, Any]], dict[str, Any]],
    module: Module,
    inputs: Sequence[Any],
    *,
    batch_size: int | None = None,
    **options: Any,
) -> torch.Tensor:
    """Embeddings (float32, CPU, in input order) of `inputs` through `pipeline`, whose first module is
    `module`. A static model batches STATIC_BATCH+ rows (small batches only slow its tokenizer)."""
    if isinstance(module, StaticEmbedding):
        return encode_bags(pipeline, module, inputs, batch_size=max(batch_size or 0, STATIC_BATCH), **options)
    if isinstance(module, CLIPModel):
        return encode_clip(pipeline, module, inputs, batch_size=batch_size or CLIP_BATCH, **options)
    raise TypeError(f"{type(module).__name__} is not an input module that encodes without a token budget")
