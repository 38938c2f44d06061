"""munjang (문장, "sentence"): Sentence-BERT end to end, with Korean as a first-class language."""

from typing import TYPE_CHECKING

from ._util.lazy_names import lazy_names
from .errors import (
    CorruptModelError,
    DataFormatError,
    ImageError,
    InputTooLongError,
    ModelLoadError,
    ModelNotFoundError,
    MunjangError,
)
from .version import __version__

if TYPE_CHECKING:
    from . import similarity
    from .client import Client, ServerError
    from .encoders.cross import CrossEncoder, load_cross_encoder
    from .encoders.dense.encoder import SentenceEncoder, load_encoder
    from .encoders.embedder import Embedder, load_embedder
    from .encoders.m3.encoder import M3Encoder, load_m3_encoder
    from .encoders.multi_vector import MultiVectorEncoder, load_multi_vector_encoder
    from .encoders.multi_vector.maxsim import maxsim
    from .encoders.remote import RemoteEncoder
    from .encoders.sparse.encoder import SparseEncoder, load_sparse_encoder
    from .images import load_image
    from .modules import Dense, Normalize, Pooling, Transformer
    from .search import Collection
    from .similarity import cos_sim, pairwise_similarity

# Each public name and the module it lives in: imported on first use, so `import munjang` (and a
# process that only searches a collection) does not load torch, the server client or the trainers.
_LAZY = {
    "similarity": "similarity",
    "Client": "client",
    "ServerError": "client",
    "CrossEncoder": "encoders.cross",
    "load_cross_encoder": "encoders.cross",
    "Embedder": "encoders.embedder",
    "load_embedder": "encoders.embedder",
    "SentenceEncoder": "encoders.dense.encoder",
    "load_encoder": "encoders.dense.encoder",
    "load_image": "images",
    "M3Encoder": "encoders.m3.encoder",
    "load_m3_encoder": "encoders.m3.encoder",
    "Dense": "modules",
    "Normalize": "modules",
    "Pooling": "modules",
    "Transformer": "modules",
    "MultiVectorEncoder": "encoders.multi_vector",
    "load_multi_vector_encoder": "encoders.multi_vector",
    "maxsim": "encoders.multi_vector",
    "RemoteEncoder": "encoders.remote",
    "Collection": "search",
    "cos_sim": "similarity",
    "pairwise_similarity": "similarity",
    "SparseEncoder": "encoders.sparse.encoder",
    "load_sparse_encoder": "encoders.sparse.encoder",
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
