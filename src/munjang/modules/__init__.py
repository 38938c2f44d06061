"""The pipeline modules of a sentence encoder, each saving and loading its own config."""

from .base import Module
from .clip import CLIPModel
from .dense import Dense
from .dropout import Dropout
from .normalize import Normalize
from .pooling import POOLING_MODES, Pooling, pool
from .static_embedding import StaticEmbedding
from .transformer import Transformer

__all__ = [
    "POOLING_MODES",
    "CLIPModel",
    "Dense",
    "Dropout",
    "Module",
    "Normalize",
    "Pooling",
    "StaticEmbedding",
    "Transformer",
    "pool",
]
