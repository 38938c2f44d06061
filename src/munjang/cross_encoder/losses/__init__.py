"""Training objectives for cross-encoders, one per file."""

from .base import CrossEncoderLoss
from .binary_cross_entropy import BinaryCrossEntropyLoss
from .cross_entropy import CrossEntropyLoss
from .mse import MSELoss

__all__ = ["BinaryCrossEntropyLoss", "CrossEncoderLoss", "CrossEntropyLoss", "MSELoss"]
