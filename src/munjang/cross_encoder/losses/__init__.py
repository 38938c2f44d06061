"""Training objectives for cross-encoders, one per file."""

from .base import CrossEncoderLoss
from .binary_cross_entropy import BinaryCrossEntropyLoss
from .cross_entropy import CrossEntropyLoss
from .mse import MSELoss

# The names used in training configs (`architecture: cross-encoder`).
CROSS_ENCODER_LOSSES: dict[str, type[CrossEncoderLoss]] = {
    "bce": BinaryCrossEntropyLoss,
    "mse": MSELoss,
    "cross-entropy": CrossEntropyLoss,
}

__all__ = [
    "CROSS_ENCODER_LOSSES",
    "BinaryCrossEntropyLoss",
    "CrossEncoderLoss",
    "CrossEntropyLoss",
    "MSELoss",
]
