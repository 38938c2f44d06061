"""Word2VecEncoder: word2vec word vectors (CBOW or skip-gram, trained by gensim) pooled into a sentence.

Training is gensim's `Word2Vec` over the tokenizer's tokens (pip install 'munjang[word2vec]'), with a
deterministic hash for its seeded initial vectors, so the same corpus, seed and `workers=1` give the
same vectors in every process (gensim's default hash, Python's `hash`, changes per process).

A sentence is pooled from the vectors of its known words (unknown words are skipped; a text with
none is the zero vector):

    mean  v(s) = 1/|s| sum_w v_w
    sif   v(s) = 1/|s| sum_w a / (a + p(w)) v_w, then v(s) - u u^T v(s)

SIF is Arora, Liang and Ma (2017), "A simple but tough-to-beat baseline for sentence embeddings":
p(w) is the word's frequency in the fitting corpus, a = 1e-3, and u the first singular vector of
the fitting corpus's weighted sentence vectors (fixed at fit time, so an encoder gives a sentence
the same vector whatever it is encoded with). Only gensim trains; the saved folder is numpy arrays
and loads without it.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..._util.extras import require
from ...search.index.tokenizers import Tokenizer
from .base import DEFAULT_MAX_CHARS, ClassicalEncoder, as_texts, corpus_tokens, make_tokenizer
from .checkpoint import EpochCheckpoint, fingerprint
from .folder import Saved, check_replaceable

ARCHITECTURES = ("cbow", "skipgram")
POOLINGS = ("mean", "sif")
# Sentences of the fitting corpus whose SIF vectors give the common component (enough for one
# direction; bounds the memory of the fit).
SIF_COMPONENT_SENTENCES = 100_000


def stable_hash(text: str) -> int:
    """gensim's `hashfxn` for seeded vectors: the same in every process (CRC-32 of the UTF-8)."""
    return zlib.crc32(text.encode("utf-8"))


@dataclass(frozen=True)
class Word2VecOptions:
    """gensim's training settings (its names and defaults, but `workers=1`: reproducible) and the pooling."""

    architecture: str = "cbow"
    vector_size: int = 100
    window: int = 5
    min_count: int = 5
    negative: int = 5
    epochs: int = 5
    seed: int = 1
    workers: int = 1
    max_final_vocab: int | None = None
    pooling: str = "sif"
    sif_a: float = 1e-3

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, not {self.architecture!r}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, not {self.pooling!r}")
        for name in ("vector_size", "window", "min_count", "epochs", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        if self.sif_a <= 0:
            raise ValueError(f"sif_a must be positive, not {self.sif_a}")

    def training_settings(self) -> dict[str, Any]:
        """What decides the trained vectors (the pooling does not): a checkpoint's fingerprint."""
        return {k: v for k, v in asdict(self).items() if k not in ("pooling", "sif_a")}

    def gensim_arguments(self) -> dict[str, Any]:
        """The keyword arguments of `gensim.models.Word2Vec` these options give."""
        return {
            "vector_size": self.vector_size,
            "window": self.window,
            "min_count": self.min_count,
            "sg": 1 if self.architecture == "skipgram" else 0,
            "negative": self.negative,
            "epochs": self.epochs,
            "seed": self.seed,
            "workers": self.workers,
            "max_final_vocab": self.max_final_vocab,
            "hashfxn": stable_hash,
        }


class CountedTexts:
    """A corpus gensim reads once per epoch, reporting every PROGRESS_STEP texts it hands out."""

    PROGRESS_STEP = 1000

    def __init__(self, documents: list[list[str]], advance: Callable[[int], object]) -> None:
        self.documents = documents
        self.advance = advance

    def __iter__(self) -> Iterator[list[str]]:
        for i, tokens in enumerate(self.documents, 1):
            yield tokens
            if i % self.PROGRESS_STEP == 0:
                self.advance(self.PROGRESS_STEP)
        self.advance(len(self.documents) % self.PROGRESS_STEP)


def train_word2vec(
    documents: Sequence[Sequence[str]],
    options: Word2VecOptions,
    show_progress_bar: bool = False,
    checkpoint: EpochCheckpoint | None = None,
    on_epoch: Callable[[int], None] | None = None,
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(words, their vectors float32, their corpus counts) of gensim's Word2Vec on `documents`.
    With `checkpoint`, each epoch is saved there and a fit of the same corpus and options goes on
    after the last saved one. `on_epoch(epochs_done)` is called after each epoch (and its save)."""
    gensim_models = require("gensim.models")
    from gensim.models.callbacks import CallbackAny2Vec
    from tqdm.auto import tqdm

    corpus = [list(d) for d in documents]
    model = gensim_models.Word2Vec(**options.gensim_arguments())
    model.build_vocab(corpus)
    words = list(model.wv.index_to_key)
    if not words:
        raise ValueError(f"no word occurs min_count={options.min_count} times in the fitting corpus")
    done = checkpoint.restore(model, options.epochs) if checkpoint is not None else 0

    class Epochs(CallbackAny2Vec):
        def __init__(self) -> None:
            self.epochs_done = done

        def on_epoch_end(self, model: Any) -> None:
            self.epochs_done += 1
            if checkpoint is not None:
                checkpoint.save(model, self.epochs_done)
            bar.set_postfix_str(f"epoch {self.epochs_done}/{options.epochs}")
            if on_epoch is not None:
                on_epoch(self.epochs_done)

    # Texts handed to gensim, across all the epochs: the bar moves within an epoch too.
    bar = tqdm(
        total=options.epochs * len(corpus),
        initial=done * len(corpus),
        desc="word2vec",
        unit="text",
        disable=not show_progress_bar,
    )
    # The rate gensim's linear decay reached after `done` of all the epochs (None: from the start).
    start = model.alpha - (model.alpha - model.min_alpha) * done / options.epochs if done else None
    try:  # what Word2Vec(sentences=corpus) runs after building the vocabulary
        if done < options.epochs:
            model.train(
                CountedTexts(corpus, bar.update),
                total_examples=model.corpus_count,
                total_words=model.corpus_total_words,
                epochs=options.epochs - done,
                start_alpha=start,
                callbacks=[Epochs()],
            )
    finally:
        bar.close()
    counts = np.array([model.wv.get_vecattr(w, "count") for w in words], dtype=np.float64)
    return words, np.asarray(model.wv.vectors, dtype=np.float32), counts


class Word2VecEncoder(ClassicalEncoder):
    """Sentence vectors pooled from word2vec word vectors (mean, or SIF with the common component removed)."""

    kind = "word2vec"
    # Sentence vectors are not unit length (a search's encode_query / encode_document make them so).
    normalizes = False

    def __init__(
        self,
        tokenizer: Tokenizer,
        words: Sequence[str],
        vectors: np.ndarray,
        counts: np.ndarray,
        options: Word2VecOptions | None = None,
        component: np.ndarray | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        fitted_on: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(tokenizer, max_chars)
        self.options = options or Word2VecOptions()
        self.words = list(words)
        self.index = {w: i for i, w in enumerate(self.words)}
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.counts = np.asarray(counts, dtype=np.float64)
        if self.vectors.shape[0] != len(self.words) or self.counts.shape != (len(self.words),):
            raise ValueError("one vector and one count per word are needed")
        a = self.options.sif_a
        self.weights = a / (a + self.counts / self.counts.sum()) if self.options.pooling == "sif" else None
        self.component = None if component is None else np.asarray(component, dtype=np.float32)
        self.fitted_on = dict(fitted_on or {})

    @classmethod
    def fit(
        cls,
        texts: Sequence[str],
        tokenizer: str | Tokenizer = "auto",
        options: Word2VecOptions | None = None,
        show_progress_bar: bool = False,
        fitted_on: dict[str, Any] | None = None,
        checkpoint_folder: str | os.PathLike[str] | None = None,
        on_epoch: Callable[[int], None] | None = None,
    ) -> Word2VecEncoder:
        """Tokenize `texts`, train word2vec on them and, for SIF, find the common component.
        `checkpoint_folder` (the folder the model will be saved to) keeps a checkpoint after each
        epoch, from which the same fit resumes (`checkpoint.py`)."""
        if checkpoint_folder is not None:
            check_replaceable(Path(checkpoint_folder))
        analyzer, tokens = corpus_tokens(texts, tokenizer, show_progress_bar)
        return cls.fit_tokens(
            tokens, analyzer, options, show_progress_bar, fitted_on, checkpoint_folder, on_epoch
        )

    @classmethod
    def fit_tokens(
        cls,
        documents: Sequence[Sequence[str]],
        tokenizer: Tokenizer,
        options: Word2VecOptions | None = None,
        show_progress_bar: bool = False,
        fitted_on: dict[str, Any] | None = None,
        checkpoint_folder: str | os.PathLike[str] | None = None,
        on_epoch: Callable[[int], None] | None = None,
    ) -> Word2VecEncoder:
        """Train on documents already tokenized (`fit` for the checkpoint)."""
        options = options or Word2VecOptions()
        checkpoint = None
        if checkpoint_folder is not None:
            check_replaceable(Path(checkpoint_folder))
            settings = {**options.training_settings(), "tokenizer": tokenizer.get_config_dict()}
            checkpoint = EpochCheckpoint(Path(checkpoint_folder), fingerprint(documents, settings))
        words, vectors, counts = train_word2vec(documents, options, show_progress_bar, checkpoint, on_epoch)
        provenance = {
            "documents": len(documents),
            "tokens": int(sum(map(len, documents))),
            **(fitted_on or {}),
        }
        encoder = cls(tokenizer, words, vectors, counts, options, None, fitted_on=provenance)
        if options.pooling == "sif":
            pooled = encoder.pool(documents[:SIF_COMPONENT_SENTENCES])
            encoder.component = np.linalg.svd(pooled, full_matrices=False)[2][0].astype(np.float32)
        return encoder

    # -- encoding ------------------------------------------------------------------------------
    def get_embedding_dimension(self) -> int:
        return int(self.vectors.shape[1])

    def pool(self, documents: Sequence[Sequence[str]]) -> np.ndarray:
        """(len(documents), dim): each document's mean or SIF-weighted mean word vector, before
        the common component is removed."""
        rows: list[int] = []
        cols: list[int] = []
        values: list[float] = []
        for row, tokens in enumerate(documents):
            ids = [self.index[t] for t in tokens if t in self.index]
            for i in ids:
                rows.append(row)
                cols.append(i)
                values.append((1.0 if self.weights is None else float(self.weights[i])) / len(ids))
        mix = sp.csr_matrix((values, (rows, cols)), shape=(len(documents), len(self.words)))
        return np.asarray(mix @ self.vectors, dtype=np.float32)

    def encode(
        self,
        sentences: Sequence[str] | str,
        *,
        prompt_name: str | None = None,
        prompt: str | None = None,
        batch_size: int | None = None,
        max_tokens: int | None = None,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        normalize_embeddings: bool = False,
        truncate_dim: int | None = None,
        truncate: bool = True,
    ) -> Any:
        """(n, dim) float32 sentence vectors (one text: (dim,)); a torch tensor with
        `convert_to_tensor`; `truncate_dim` keeps the first dimensions."""
        texts, single = as_texts(sentences)
        tokens = self.tokenize(
            texts,
            prompt_name=prompt_name,
            prompt=prompt,
            truncate=truncate,
            show_progress_bar=show_progress_bar,
        )
        out = self.pool(tokens)
        if self.component is not None:
            out = out - np.outer(out @ self.component, self.component)
        if truncate_dim is not None:
            out = out[:, :truncate_dim]
        if normalize_embeddings:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = out / np.where(norms > 0, norms, 1.0)
        out = np.ascontiguousarray(out, dtype=np.float32)
        result = out[0] if single else out
        if convert_to_tensor:
            import torch

            return torch.from_numpy(result)
        return result

    def input_lengths(self, texts: Sequence[str]) -> list[int]:
        """Each text's characters: what `max_seq_length` bounds (the tokenizer's time grows with them)."""
        return [len(t) for t in texts]

    def decode_ids(self, ids: list[int]) -> str:
        """Refused: word2vec reads text (its words come from the tokenizer), not token ids."""
        raise ValueError("this word2vec model reads text, not token ids; send strings")

    def word_vector(self, word: str) -> np.ndarray:
        """The trained vector of `word` (KeyError for a word the model does not know)."""
        return self.vectors[self.index[word]]

    def similarity(self, a: Any, b: Any) -> np.ndarray:
        """The cosine of every row of `a` with every row of `b`."""
        left, right = np.atleast_2d(np.asarray(a, np.float32)), np.atleast_2d(np.asarray(b, np.float32))
        left = left / np.maximum(np.linalg.norm(left, axis=1, keepdims=True), 1e-12)
        right = right / np.maximum(np.linalg.norm(right, axis=1, keepdims=True), 1e-12)
        return np.asarray(left @ right.T, dtype=np.float32)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "dense",
            "classical": self.kind,
            "dimension": self.get_embedding_dimension(),
            "vocab_size": len(self.words),
            "tokenizer": self.tokenizer_config(),
            "options": asdict(self.options),
            "fitted_on": self.fitted_on,
            "max_chars": self.max_chars,
            "similarity_fn_name": self.similarity_fn_name,
        }

    def saved(self) -> Saved:
        arrays: dict[str, np.ndarray] = {"vectors": self.vectors, "counts": self.counts}
        if self.component is not None:
            arrays["component"] = self.component
        config = {
            "tokenizer": self.tokenizer_config(),
            "options": asdict(self.options),
            "max_chars": self.max_chars,
            "fitted_on": self.fitted_on,
        }
        return Saved(self.kind, config, self.words, arrays)

    @classmethod
    def from_saved(cls, saved: Saved) -> Word2VecEncoder:
        config = saved.config
        return cls(
            make_tokenizer(dict(config["tokenizer"])),
            saved.vocabulary,
            saved.arrays["vectors"],
            saved.arrays["counts"],
            Word2VecOptions(**config["options"]),
            saved.arrays.get("component"),
            int(config.get("max_chars", DEFAULT_MAX_CHARS)),
            dict(config.get("fitted_on") or {}),
        )
