"""munjang (문장, "sentence"): Sentence-BERT end to end, with Korean as a first-class language."""

from . import similarity
from .client import Client, ServerError
from .cross_encoder import CrossEncoder, load_cross_encoder
from .embedder import Embedder, load_embedder
from .encoder import SentenceEncoder, load_encoder
from .errors import (
    CorruptModelError,
    DataFormatError,
    ImageError,
    InputTooLongError,
    ModelLoadError,
    ModelNotFoundError,
    MunjangError,
)
from .images import load_image
from .m3_encoder import M3Encoder, load_m3_encoder
from .modules import Dense, Normalize, Pooling, Transformer
from .multi_vector import MultiVectorEncoder, load_multi_vector_encoder, maxsim
from .remote import RemoteEncoder
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
    "Embedder",
    "ImageError",
    "InputTooLongError",
    "M3Encoder",
    "ModelLoadError",
    "ModelNotFoundError",
    "MultiVectorEncoder",
    "MunjangError",
    "Normalize",
    "Pooling",
    "RemoteEncoder",
    "SentenceEncoder",
    "ServerError",
    "SparseEncoder",
    "Transformer",
    "__version__",
    "cos_sim",
    "load_cross_encoder",
    "load_embedder",
    "load_encoder",
    "load_image",
    "load_m3_encoder",
    "load_multi_vector_encoder",
    "load_sparse_encoder",
    "maxsim",
    "pairwise_similarity",
    "similarity",
]
