"""munjang (문장, "sentence"): Sentence-BERT end to end, with Korean as a first-class language."""

from . import similarity
from .client import Client, ServerError
from .cross_encoder import CrossEncoder, load_cross_encoder
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
from .multi_vector import MultiVectorEncoder, load_multi_vector_encoder, maxsim
from .search import Collection
from .similarity import cos_sim, pairwise_similarity
from .version import __version__

__all__ = [
    "Client",
    "Collection",
    "CorruptModelError",
    "CrossEncoder",
    "DataFormatError",
    "Dense",
    "InputTooLongError",
    "ModelLoadError",
    "ModelNotFoundError",
    "MultiVectorEncoder",
    "MunjangError",
    "Normalize",
    "Pooling",
    "SentenceEncoder",
    "ServerError",
    "Transformer",
    "__version__",
    "cos_sim",
    "load_cross_encoder",
    "load_encoder",
    "load_multi_vector_encoder",
    "maxsim",
    "pairwise_similarity",
    "similarity",
]
