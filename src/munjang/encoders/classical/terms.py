"""TermEncoder: one-hot, bag of words and TF-IDF vectors over a fitted vocabulary, as scipy CSR rows.

One column per term of the fitting corpus (sorted, as scikit-learn orders them). For a text with
term counts tf(t), a corpus of n documents and df(t) documents holding t:

    onehot  x_t = 1 if tf(t) > 0                      (CountVectorizer(binary=True))
    bow     x_t = tf(t)                               (CountVectorizer)
    tfidf   x_t = tf'(t) * idf(t), then x / ||x||_2   (TfidfVectorizer)
            tf'(t) = 1 + ln tf(t) with sublinear_tf, else tf(t)
            idf(t) = ln((1 + n) / (1 + df(t))) + 1 with smooth_idf, else ln(n / df(t)) + 1

so each kind equals scikit-learn's vectorizer given the same tokens (tests/encoders/classical/).
Terms the fitting corpus never saw are dropped: the words no vector of this kind can say anything
about. Similarity is the cosine; `encode_query` / `encode_document` give unit rows, so a sparse
index's dot product (a collection's sparse retriever) ranks by it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ...search.index.tokenizers import Tokenizer
from .base import DEFAULT_MAX_CHARS, ClassicalEncoder, as_texts, corpus_tokens, make_tokenizer
from .folder import Saved

TERM_KINDS = ("onehot", "bow", "tfidf")
NORMS = ("l2", None)


@dataclass(frozen=True)
class TermOptions:
    """How terms are kept and weighted (scikit-learn's names and defaults): a term needs `min_df`
    documents; `max_features` keeps the most frequent terms (ties: the earlier term); `norm` is
    "l2" or None (default: "l2" for TF-IDF, None for counts, as scikit-learn)."""

    min_df: int = 1
    max_features: int | None = None
    smooth_idf: bool = True
    sublinear_tf: bool = False
    norm: str | None = None

    def __post_init__(self) -> None:
        if self.min_df < 1:
            raise ValueError(f"min_df must be at least 1, not {self.min_df}")
        if self.max_features is not None and self.max_features < 1:
            raise ValueError(f"max_features must be at least 1, not {self.max_features}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be 'l2' or None, not {self.norm!r}")


class Terms:
    """The tokenizer and the vocabulary: text -> tokens, and column ids back to terms."""

    def __init__(self, analyzer: Tokenizer, vocabulary: Sequence[str]) -> None:
        self.analyzer = analyzer
        self.vocabulary = list(vocabulary)
        self.index = {term: i for i, term in enumerate(self.vocabulary)}

    def __call__(self, text: str) -> list[str]:
        return self.analyzer(text)

    def convert_ids_to_tokens(self, ids: Iterable[int]) -> list[str]:
        """The terms of column ids (a SPLADE tokenizer's method, so vectors decode alike)."""
        return [self.vocabulary[int(i)] for i in ids]


def _unit_rows(matrix: sp.csr_matrix) -> sp.csr_matrix:
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sp.csr_matrix(sp.diags(scale) @ matrix)


class TermEncoder(ClassicalEncoder):
    """A one-hot, bag-of-words or TF-IDF encoder fitted on a corpus (`fit` / `fit_tokens`)."""

    def __init__(
        self,
        kind: str,
        tokenizer: Tokenizer,
        vocabulary: Sequence[str],
        idf: np.ndarray | None = None,
        options: TermOptions | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        fitted_on: dict[str, Any] | None = None,
    ) -> None:
        if kind not in TERM_KINDS:
            raise ValueError(f"unknown term weighting {kind!r}; choose from {', '.join(TERM_KINDS)}")
        super().__init__(tokenizer, max_chars)
        self.kind = kind
        self.options = options or TermOptions(norm="l2" if kind == "tfidf" else None)
        self.terms = Terms(tokenizer, vocabulary)
        if kind == "tfidf" and (idf is None or idf.shape != (len(self.terms.vocabulary),)):
            raise ValueError("a TF-IDF encoder needs one idf weight per vocabulary term")
        self.idf = None if idf is None else np.asarray(idf, dtype=np.float64)
        self.fitted_on = dict(fitted_on or {})

    # -- fitting -------------------------------------------------------------------------------
    @classmethod
    def fit(
        cls,
        kind: str,
        texts: Sequence[str],
        tokenizer: str | Tokenizer = "auto",
        options: TermOptions | None = None,
        show_progress_bar: bool = False,
        fitted_on: dict[str, Any] | None = None,
    ) -> TermEncoder:
        """Tokenize `texts` and fit the vocabulary (and idf) on them."""
        analyzer, tokens = corpus_tokens(texts, tokenizer, show_progress_bar)
        return cls.fit_tokens(kind, tokens, analyzer, options, fitted_on)

    @classmethod
    def fit_tokens(
        cls,
        kind: str,
        documents: Sequence[Sequence[str]],
        tokenizer: Tokenizer,
        options: TermOptions | None = None,
        fitted_on: dict[str, Any] | None = None,
    ) -> TermEncoder:
        """Fit on documents already tokenized (what scikit-learn's `analyzer=callable` sees)."""
        options = options or TermOptions(norm="l2" if kind == "tfidf" else None)
        df: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for tokens in documents:
            total.update(tokens)
            df.update(set(tokens))
        kept = sorted(t for t, n in df.items() if n >= options.min_df)
        if options.max_features is not None and len(kept) > options.max_features:
            by_frequency = sorted(kept, key=lambda t: -total[t])  # stable: ties keep the earlier term
            kept = sorted(by_frequency[: options.max_features])
        if not kept:
            raise ValueError("the fitting corpus leaves no term (is it empty, or min_df too high?)")
        n = len(documents)
        counts = np.array([df[t] for t in kept], dtype=np.float64)
        smoothed = np.log((1.0 + n) / (1.0 + counts)) if options.smooth_idf else np.log(n / counts)
        idf = smoothed + 1.0
        provenance = {"documents": n, "tokens": int(sum(total.values())), **(fitted_on or {})}
        return cls(kind, tokenizer, kept, idf if kind == "tfidf" else None, options, fitted_on=provenance)

    # -- encoding ------------------------------------------------------------------------------
    def get_embedding_dimension(self) -> int:
        """The vocabulary size: the width of every vector."""
        return len(self.terms.vocabulary)

    @property
    def tokenizer(self) -> Terms:
        return self.terms

    def transform_tokens(self, documents: Sequence[Sequence[str]]) -> sp.csr_matrix:
        """The (documents x vocabulary) float32 CSR matrix of tokenized documents."""
        index = self.terms.index
        rows: list[int] = []
        cols: list[int] = []
        values: list[float] = []
        sublinear = self.kind == "tfidf" and self.options.sublinear_tf
        for row, tokens in enumerate(documents):
            counted = Counter(index[t] for t in tokens if t in index)
            for col, tf in counted.items():
                rows.append(row)
                cols.append(col)
                values.append(1.0 if self.kind == "onehot" else (1.0 + math.log(tf) if sublinear else tf))
        shape = (len(documents), len(index))
        matrix = sp.csr_matrix((np.asarray(values, np.float64), (rows, cols)), shape=shape)
        matrix.sort_indices()
        if self.idf is not None:
            matrix = sp.csr_matrix(matrix @ sp.diags(self.idf))
        if self.options.norm == "l2":
            matrix = _unit_rows(matrix)
        return sp.csr_matrix(matrix, dtype=np.float32)

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
        max_active_dims: int | None = None,
        truncate: bool = True,
    ) -> sp.csr_matrix:
        """A float32 CSR row per text (one text: a 1 x vocabulary matrix); `normalize_embeddings`
        makes rows unit length, `max_active_dims` keeps each row's largest weights. The batch and
        tensor options of dense encoders do not apply to term vectors and are ignored."""
        texts, _ = as_texts(sentences)
        if max_active_dims is not None and max_active_dims < 1:
            raise ValueError(f"max_active_dims must be at least 1, not {max_active_dims}")
        tokens = self.tokenize(
            texts,
            prompt_name=prompt_name,
            prompt=prompt,
            truncate=truncate,
            show_progress_bar=show_progress_bar,
        )
        matrix = self.transform_tokens(tokens)
        if max_active_dims is not None:
            matrix = _keep_largest(matrix, max_active_dims)
        if normalize_embeddings and self.options.norm != "l2":
            matrix = sp.csr_matrix(_unit_rows(matrix), dtype=np.float32)
        return matrix

    def similarity(self, a: Any, b: Any) -> np.ndarray:
        """The cosine of every row of `a` with every row of `b` (dense, len(a) x len(b))."""
        left, right = _unit_rows(sp.csr_matrix(a)), _unit_rows(sp.csr_matrix(b))
        return np.asarray((left @ right.T).toarray(), dtype=np.float32)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "sparse",
            "classical": self.kind,
            "vocab_size": self.get_embedding_dimension(),
            "tokenizer": self.tokenizer_config(),
            "options": asdict(self.options),
            "fitted_on": self.fitted_on,
            "max_chars": self.max_chars,
            "similarity_fn_name": self.similarity_fn_name,
        }

    def saved(self) -> Saved:
        arrays = {} if self.idf is None else {"idf": self.idf}
        config = {
            "tokenizer": self.tokenizer_config(),
            "options": asdict(self.options),
            "max_chars": self.max_chars,
            "fitted_on": self.fitted_on,
        }
        return Saved(self.kind, config, self.terms.vocabulary, arrays)

    @classmethod
    def from_saved(cls, saved: Saved) -> TermEncoder:
        config = saved.config
        return cls(
            saved.kind,
            make_tokenizer(dict(config["tokenizer"])),
            saved.vocabulary,
            saved.arrays.get("idf"),
            TermOptions(**config["options"]),
            int(config.get("max_chars", DEFAULT_MAX_CHARS)),
            dict(config.get("fitted_on") or {}),
        )


def _keep_largest(matrix: sp.csr_matrix, keep: int) -> sp.csr_matrix:
    """Each row's `keep` largest weights (ties: the lower column)."""
    out = matrix.copy()
    for row in range(out.shape[0]):
        start, end = out.indptr[row], out.indptr[row + 1]
        if end - start > keep:
            values = out.data[start:end]
            order = np.argsort(-values, kind="stable")
            values[order[keep:]] = 0.0
    out.eliminate_zeros()
    return sp.csr_matrix(out)
