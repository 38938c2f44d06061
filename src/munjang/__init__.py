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
from .search import Collection
from .similarity import cos_sim, pairwise_similarity
from .sparse_encoder import SparseEncoder, load_sparse_encoder
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
    "MunjangError",
    "Normalize",
    "Pooling",
    "SentenceEncoder",
    "ServerError",
    "SparseEncoder",
    "Transformer",
    "__version__",
    "cos_sim",
    "load_cross_encoder",
    "load_encoder",
    "load_sparse_encoder",
    "pairwise_similarity",
    "similarity",
]
