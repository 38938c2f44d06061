"""Classical sentence representations beside Sentence-BERT: one-hot, bag of words and TF-IDF
(sparse term vectors) and word2vec (CBOW / skip-gram word vectors, mean or SIF pooled), fitted on a
corpus the user gives, with the API every munjang encoder has (docs/seeds.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._util.lazy_names import lazy_names

if TYPE_CHECKING:
    from .loading import KINDS, fit_classical, load_classical_encoder
    from .terms import TermEncoder, TermOptions
    from .word2vec import Word2VecEncoder, Word2VecOptions

# Each public name and the module defining it, imported on first use (PEP 562).
_LAZY = {
    "KINDS": "loading",
    "fit_classical": "loading",
    "load_classical_encoder": "loading",
    "TermEncoder": "terms",
    "TermOptions": "terms",
    "Word2VecEncoder": "word2vec",
    "Word2VecOptions": "word2vec",
}

__all__ = [
    "KINDS",
    "TermEncoder",
    "TermOptions",
    "Word2VecEncoder",
    "Word2VecOptions",
    "fit_classical",
    "load_classical_encoder",
]

__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
