"""bge-m3-style encoders: dense, lexical (sparse) and ColBERT vectors from one pass, and the
sparse and multi-vector views that let them stand where those encoder kinds do."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._util.lazy_names import lazy_names

if TYPE_CHECKING:
    from .encoder import M3Encoder, M3Output, load_m3_encoder
    from .views import M3MultiVectorView, M3SparseView

# Each public name and the module defining it, imported on first use (PEP 562): importing this
# package loads no torch; `from munjang.encoders.m3 import X` imports what X needs.
_LAZY = {
    "M3Encoder": "encoder",
    "M3Output": "encoder",
    "load_m3_encoder": "encoder",
    "M3MultiVectorView": "views",
    "M3SparseView": "views",
}

__all__ = [
    "M3Encoder",
    "M3MultiVectorView",
    "M3Output",
    "M3SparseView",
    "load_m3_encoder",
]

__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
