"""What `/v1/embeddings` serves: a sentence encoder (`SentenceEncoder`) or a classical word2vec
encoder, both `encoders.whole_text.WholeTextEncoder`s in shape, loaded from a name or folder as
`munjang serve --model` gives it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ..encoders.dense.encoder import SentenceEncoder, load_encoder
from ..encoders.formats import is_classical_folder

if TYPE_CHECKING:
    from ..encoders.classical.word2vec import Word2VecEncoder

# A served model: a SentenceEncoder, or a classical word2vec encoder (loaded only when served).
ServedModel = Union[SentenceEncoder, "Word2VecEncoder"]


def load_served_model(name_or_path: str | os.PathLike[str], **options: Any) -> ServedModel:
    """A word2vec folder `munjang models fit-classical` wrote as its encoder (a term model's folder is
    refused: it serves on /v1/sparse_embeddings), anything else through `load_encoder(**options)`."""
    if Path(name_or_path).is_dir() and is_classical_folder(Path(name_or_path)):
        from ..encoders.classical.loading import load_classical_encoder
        from ..encoders.classical.terms import TermEncoder

        encoder = load_classical_encoder(name_or_path)
        if isinstance(encoder, TermEncoder):
            raise ValueError(
                f"{name_or_path} holds {encoder.kind} term vectors (sparse); serve it with --sparse-model"
            )
        return encoder
    return load_encoder(name_or_path, **options)
