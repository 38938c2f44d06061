"""Cross-encoders: a pair of texts in one transformer pass -> a score or class logits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._util.lazy_names import lazy_names

if TYPE_CHECKING:
    from .loading import load_cross_encoder
    from .model import CrossEncoder, default_activation, seeds_head

# Each public name and the module defining it, imported on first use (PEP 562): importing this
# package loads no torch; `from munjang.encoders.cross import X` imports what X needs.
_LAZY = {
    "load_cross_encoder": "loading",
    "CrossEncoder": "model",
    "default_activation": "model",
    "seeds_head": "model",
}

__all__ = [
    "CrossEncoder",
    "default_activation",
    "load_cross_encoder",
    "seeds_head",
]

__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
