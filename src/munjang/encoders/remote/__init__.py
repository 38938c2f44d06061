"""Encoders behind an OpenAI-compatible embeddings API (OpenAI, text-embeddings-inference, a munjang
server): names (`names.py`), the HTTP calls and their retries (`transport.py`), the disk cache
(`cache.py`), what was spent (`usage.py`) and the encoder itself (`encoder.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._util.lazy_names import lazy_names

if TYPE_CHECKING:
    from .cache import EmbeddingCache
    from .encoder import RemoteEncoder
    from .names import RemoteNameError, RemoteSpec, is_remote_name, parse_remote_name
    from .transport import RemoteAPIError, RetryPolicy
    from .usage import RemoteUsage

# Each public name and the module defining it, imported on first use (PEP 562): importing this
# package loads no torch; `from munjang.encoders.remote import X` imports what X needs.
_LAZY = {
    "EmbeddingCache": "cache",
    "RemoteEncoder": "encoder",
    "RemoteNameError": "names",
    "RemoteSpec": "names",
    "is_remote_name": "names",
    "parse_remote_name": "names",
    "RemoteAPIError": "transport",
    "RetryPolicy": "transport",
    "RemoteUsage": "usage",
}

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

__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
