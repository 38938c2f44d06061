"""Fast inference: token-budget batching and the backends that turn a padded batch into token vectors.

Every backend takes the same padded batch (input ids, attention mask, token type ids) and returns
token embeddings (batch, seq, hidden) as float32; pooling, dense and normalize then run in torch,
so all backends share one pooling implementation and return the same shapes.
"""

from .backends import build_backend, resolve_backend
from .base import BACKENDS, PRECISIONS, BackendError, TokenBackend
from .batching import padding_fraction, token_budget_batches
from .hardware import best_precision, cpu_has_fast_bf16

__all__ = [
    "BACKENDS",
    "PRECISIONS",
    "BackendError",
    "TokenBackend",
    "best_precision",
    "build_backend",
    "cpu_has_fast_bf16",
    "padding_fraction",
    "resolve_backend",
    "token_budget_batches",
]
