"""Encoders behind an OpenAI-compatible embeddings API (OpenAI, text-embeddings-inference, a munjang
server): names (`names.py`), the HTTP calls and their retries (`transport.py`), the disk cache
(`cache.py`), what was spent (`usage.py`) and the encoder itself (`encoder.py`)."""

from .cache import EmbeddingCache
from .encoder import RemoteEncoder
from .names import RemoteNameError, RemoteSpec, is_remote_name, parse_remote_name
from .transport import RemoteAPIError, RetryPolicy
from .usage import RemoteUsage

__all__ = [
    "EmbeddingCache",
    "RemoteAPIError",
    "RemoteEncoder",
    "RemoteNameError",
    "RemoteSpec",
    "RemoteUsage",
    "RetryPolicy",
    "is_remote_name",
    "parse_remote_name",
]
