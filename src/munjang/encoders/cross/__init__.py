"""Cross-encoders: a pair of texts in one transformer pass -> a score or class logits."""

from .loading import load_cross_encoder
from .model import CrossEncoder, default_activation, seeds_head

__all__ = ["CrossEncoder", "default_activation", "load_cross_encoder", "seeds_head"]
