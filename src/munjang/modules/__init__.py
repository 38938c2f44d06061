"""The pipeline modules of a sentence encoder, each saving and loading its own config.

Names are imported on first use (PEP 562), so the torch-free helpers here (`cached_word_ids`) load
without torch: a process that only encodes queries through a static model never imports it.
"""

from typing import TYPE_CHECKING

from .._util.lazy_names import lazy_names

if TYPE_CHECKING:
    from .base import Module
    from .clip import CLIPModel
    from .dense import Dense
    from .dropout import Dropout
    from .mlm_transformer import MLMTransformer
    from .normalize import Normalize
    from .pooling import POOLING_MODES, Pooling, pool
    from .router import Router
    from .sparse_static_embedding import SparseStaticEmbedding
    from .splade_pooling import SpladePooling
    from .static_embedding import StaticEmbedding
    from .transformer import Transformer

_LAZY = {
    "Module": "base",
    "CLIPModel": "clip",
    "Dense": "dense",
    "Dropout": "dropout",
    "MLMTransformer": "mlm_transformer",
    "Normalize": "normalize",
    "POOLING_MODES": "pooling",
    "Pooling": "pooling",
    "pool": "pooling",
    "Router": "router",
    "SparseStaticEmbedding": "sparse_static_embedding",
    "SpladePooling": "splade_pooling",
    "StaticEmbedding": "static_embedding",
    "Transformer": "transformer",
}

__all__ = [
    "POOLING_MODES",
    "CLIPModel",
    "Dense",
    "Dropout",
    "MLMTransformer",
    "Module",
    "Normalize",
    "Pooling",
    "Router",
    "SparseStaticEmbedding",
    "SpladePooling",
    "StaticEmbedding",
    "Transformer",
    "pool",
]

__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
