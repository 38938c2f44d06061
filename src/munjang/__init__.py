"""munjang (문장, "sentence"): Sentence-BERT end to end, with Korean as a first-class language."""

from typing import TYPE_CHECKING

from .errors import (
    CorruptModelError,
    DataFormatError,
    ImageError,
    InputTooLongError,
    ModelLoadError,
    ModelNotFoundError,
    MunjangError,
)
from .lazy_names import lazy_names
from .version import __version__

if TYPE_CHECKING:
    from . import similarity
    from .client import Client, ServerError
    from .cross_encoder import CrossEncoder, load_cross_encoder
    from .embedder import Embedder, load_embedder
    from .encoder import SentenceEncoder, load_encoder
    from .images import load_image
    from .m3_encoder import M3Encoder, load_m3_encoder
    from .modules import Dense, Normalize, Pooling, Transformer
    from .multi_vector import MultiVectorEncoder, load_multi_vector_encoder
    from .multi_vector.maxsim import maxsim
    from .remote import RemoteEncoder
    from .search import Collection
    from .similarity import cos_sim, pairwise_similarity
    from .sparse_encoder import SparseEncoder, load_sparse_encoder

# Each public name and the module it lives in: imported on first use, so `import munjang` (and a
# process that only searches a collection) does not load torch, the server client or the trainers.
_LAZY = {
    "similarity": "similarity",
    "Client": "client",
    "ServerError": "client",
    "CrossEncoder": "cross_encoder",
    "load_cross_encoder": "cross_encoder",
    "Embedder": "embedder",
    "load_embedder": "embedder",
    "SentenceEncoder": "encoder",
    "load_encoder": "encoder",
    "load_image": "images",
    "M3Encoder": "m3_encoder",
    "load_m3_encoder": "m3_encoder",
    "Dense": "modules",
    "Normalize": "modules",
    "Pooling": "modules",
    "Transformer": "modules",
    "MultiVectorEncoder": "multi_vector",
    "load_multi_vector_encoder": "multi_vector",
    "maxsim": "multi_vector",
    "RemoteEncoder": "remote",
    "Collection": "search",
    "cos_sim": "similarity",
    "pairwise_similarity": "similarity",
    "SparseEncoder": "sparse_encoder",
    "load_sparse_encoder": "sparse_encoder",
}

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


__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
