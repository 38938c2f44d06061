"""The pipeline modules of a sentence encoder, each saving and loading its own config."""

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
