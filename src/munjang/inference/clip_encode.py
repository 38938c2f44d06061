"""Encoding with a CLIP model: texts and images in one call. Texts (str) go through the text tower and
images (PIL images, or Paths read from disk) through the vision tower, each kind in its own batches;
the vectors come back in the caller's order, in the one space both towers project into."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from tqdm.auto import tqdm

from ..images import as_pil_image, is_image_input
from ..modules.clip import CLIPModel

# Rows per batch when the caller gives no batch size (an image batch holds full pixel tensors).
CLIP_BATCH = 32


def split_inputs(inputs: Sequence[Any]) -> tuple[list[int], list[int]]:
    """The positions of the texts and of the images in `inputs`; anything else is a TypeError."""
    texts: list[int] = []
    images: list[int] = []
    for i, value in enumerate(inputs):
        if isinstance(value, str):
            texts.append(i)
        elif is_image_input(value):
            images.append(i)
        else:
            raise TypeError(
                f"inputs[{i}] is {type(value).__name__}: a CLIP model encodes str (text), "
                "PIL images and pathlib.Path image files"
            )
    return texts, images


@torch.inference_mode()
def encode_clip(
    pipeline: Callable[[dict[str, Any]], dict[str, Any]],
    clip: CLIPModel,
    inputs: Sequence[Any],
    *,
    dim: int,
    device: torch.device,
    prompt: str = "",
    batch_size: int | None = None,
    truncate_dim: int | None = None,
    normalize_embeddings: bool = False,
    show_progress_bar: bool = False,
) -> torch.Tensor:
    """Embeddings (float32, CPU, one row per input in order) of texts and images through `pipeline`
    (the model: CLIPModel first); `prompt` is prepended to each text."""
    text_rows, image_rows = split_inputs(inputs)
    rows = batch_size or CLIP_BATCH
    out = torch.empty((len(inputs), truncate_dim or dim), dtype=torch.float32)
    with tqdm(total=len(inputs), desc="Encoding", unit="input", disable=not show_progress_bar) as bar:
        for positions, is_image in ((text_rows, False), (image_rows, True)):
            for start in range(0, len(positions), rows):
                batch = positions[start : start + rows]
                if is_image:
                    features = clip.preprocess_images([as_pil_image(inputs[i]) for i in batch])
                else:
                    features = clip.tokenize([prompt + inputs[i] for i in batch])
                vectors = pipeline({k: v.to(device) for k, v in features.items()})["sentence_embedding"]
                if truncate_dim is not None:
                    vectors = vectors[:, :truncate_dim]
                if normalize_embeddings:
                    vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
                out[torch.tensor(batch, dtype=torch.long)] = vectors.float().cpu()
                bar.update(len(batch))
    return out
