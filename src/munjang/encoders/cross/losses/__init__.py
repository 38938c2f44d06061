"""Training objectives for cross-encoders, one per file."""

from .base import CrossEncoderLoss
from .binary_cross_entropy import BinaryCrossEntropyLoss
from .cross_entropy import CrossEntropyLoss
from .list_net import ListNetLoss
from .listwise import ListwiseLoss, listwise_batch
from .mse import MSELoss
from .plist_mle import ListMLELoss, PListMLELambdaWeight, PListMLELoss

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
    "ListMLELoss",
    "ListNetLoss",
    "ListwiseLoss",
    "MSELoss",
    "PListMLELambdaWeight",
    "PListMLELoss",
    "listwise_batch",
]
