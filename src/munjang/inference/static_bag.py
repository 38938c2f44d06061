"""Encoding with a static (embedding bag) model: batches of texts through its own tokenizer and the
pipeline. A text's vector does not depend on the others in its batch, so there is no length sorting
and no padding; tokenizing dominates the cost, so batches are large."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tqdm.auto import tqdm

from ..modules.static_embedding import StaticEmbedding

# Rows per batch when the caller gives no batch size.
STATIC_BATCH = 4096


@torch.inference_mode()
def encode_bags(
    pipeline: Callable[[dict[str, Any]], dict[str, Any]],
    static: StaticEmbedding,
    texts: Sequence[str],
    *,
    dim: int,
    device: torch.device,
    prompt: str = "",
    batch_size: int | None = None,
    truncate_dim: int | None = None,
    normalize_embeddings: bool = False,
    show_progress_bar: bool = False,
) -> torch.Tensor:
    """Sentence embeddings (float32, CPU, one row per text in order) of `texts` through `pipeline`
    (the model: StaticEmbedding first), `prompt` prepended to each text."""
    rows = batch_size or STATIC_BATCH
    out = torch.empty((len(texts), truncate_dim or dim), dtype=torch.float32)
    with tqdm(total=len(texts), desc="Encoding", unit="sent", disable=not show_progress_bar) as bar:
        for start in range(0, len(texts), rows):
            chunk = list(texts[start : start + rows])
            features = static.tokenize([prompt + t for t in chunk] if prompt else chunk)
            vectors = pipeline({k: v.to(device) for k, v in features.items()})["sentence_embedding"]
            if truncate_dim is not None:
                vectors = vectors[:, :truncate_dim]
            if normalize_embeddings:
                vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
            out[start : start + len(chunk)] = vectors.float().cpu()
            bar.update(len(chunk))
    return out
