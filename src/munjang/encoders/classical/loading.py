"""Classical encoders by kind: fitted on a corpus (`fit_classical`) and loaded from their folder
(`load_classical_encoder`, which `load_embedder` calls for a folder marked ClassicalEncoder)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...errors import ModelLoadError
from .base import ClassicalEncoder
from .folder import read_folder
from .terms import TERM_KINDS, TermEncoder, TermOptions
from .word2vec import Word2VecEncoder, Word2VecOptions

# What `fit_classical` fits: the term weightings and the two word2vec architectures.
KINDS = (*TERM_KINDS, "cbow", "skipgram")


def fit_classical(
    kind: str,
    texts: Sequence[str],
    *,
    tokenizer: str = "auto",
    show_progress_bar: bool = False,
    fitted_on: dict[str, Any] | None = None,
    checkpoint_folder: str | os.PathLike[str] | None = None,
    on_epoch: Callable[[int], None] | None = None,
    **options: Any,
) -> ClassicalEncoder:
    """A `kind` encoder (one-hot, bow, tfidf, cbow, skipgram) fitted on `texts`; `options` are
    `TermOptions`' (min_df, max_features, smooth_idf, sublinear_tf, norm) or `Word2VecOptions`'
    (vector_size, window, min_count, epochs, seed, workers, pooling, ...). word2vec keeps a
    checkpoint in `checkpoint_folder` after each epoch (`on_epoch(epochs_done)` is called then) and
    resumes the same fit from it; the term kinds fit in one pass and keep none."""
    if kind not in KINDS:
        raise ValueError(f"unknown classical kind {kind!r}; choose from {', '.join(KINDS)}")
    if not texts:
        raise ValueError("the fitting corpus is empty")
    if kind in TERM_KINDS:
        term_options = TermOptions(**{"norm": "l2" if kind == "tfidf" else None, **options})
        return TermEncoder.fit(kind, texts, tokenizer, term_options, show_progress_bar, fitted_on)
    w2v_options = Word2VecOptions(architecture=kind, **options)
    return Word2VecEncoder.fit(
        texts, tokenizer, w2v_options, show_progress_bar, fitted_on, checkpoint_folder, on_epoch
    )


def load_classical_encoder(path: str | os.PathLike[str]) -> TermEncoder | Word2VecEncoder:
    """The classical encoder saved in `path` (its files checked against their checksums first)."""
    folder = Path(path)
    saved = read_folder(folder)
    try:
        encoder: TermEncoder | Word2VecEncoder = (
            Word2VecEncoder.from_saved(saved) if saved.kind == "word2vec" else TermEncoder.from_saved(saved)
        )
    except (KeyError, TypeError, ValueError) as e:
        raise ModelLoadError(f"{folder}: not a valid classical encoder ({e})") from e
    encoder.model_folder = folder
    return encoder
