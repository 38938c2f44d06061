"""Dense sentence encoders (Sentence-BERT): one vector per text, with backends chosen per machine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._util.lazy_names import lazy_names

if TYPE_CHECKING:
    from .encoder import SentenceEncoder, load_encoder

# Each public name and the module defining it, imported on first use (PEP 562): importing this
# package loads no torch; `from munjang.encoders.dense import X` imports what X needs.
_LAZY = {
    "SentenceEncoder": "encoder",
    "load_encoder": "encoder",
}

__all__ = [
    "SentenceEncoder",
    "load_encoder",
]

__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
