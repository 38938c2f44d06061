"""munjang (문장, "sentence"): Sentence-BERT end to end, with Korean as a first-class language."""

from .encoder import SentenceEncoder, load_encoder
from .errors import (
    CorruptModelError,
    DataFormatError,
    InputTooLongError,
    ModelLoadError,
    ModelNotFoundError,
    MunjangError,
)
from .modules import Dense, Normalize, Pooling, Transformer
from .similarity import pairwise_similarity, similarity

__version__ = "0.1.0"

__all__ = [
    "CorruptModelError",
    "DataFormatError",
    "Dense",
    "InputTooLongError",
    "ModelLoadError",
    "ModelNotFoundError",
    "MunjangError",
    "Normalize",
    "Pooling",
    "SentenceEncoder",
    "Transformer",
    "__version__",
    "load_encoder",
    "pairwise_similarity",
    "similarity",
]
