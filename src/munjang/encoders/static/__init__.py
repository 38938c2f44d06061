"""Static (table lookup) models' query encoder in numpy, for processes that only encode queries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._util.lazy_names import lazy_names

if TYPE_CHECKING:
    from .query_encoder import StaticQueryEncoder

# Each public name and the module defining it, imported on first use (PEP 562): importing this
# package loads no torch; `from munjang.encoders.static import X` imports what X needs.
_LAZY = {
    "StaticQueryEncoder": "query_encoder",
}

__all__ = [
    "StaticQueryEncoder",
]

__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
