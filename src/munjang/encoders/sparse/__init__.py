"""Sparse (SPLADE, inference-free) encoders: one weight per vocabulary entry a text activates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._util.lazy_names import lazy_names

if TYPE_CHECKING:
    from .encoder import SparseEncoder, load_sparse_encoder

# Each public name and the module defining it, imported on first use (PEP 562): importing this
# package loads no torch; `from munjang.encoders.sparse import X` imports what X needs.
_LAZY = {
    "SparseEncoder": "encoder",
    "load_sparse_encoder": "encoder",
}

__all__ = [
    "SparseEncoder",
    "load_sparse_encoder",
]

__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
