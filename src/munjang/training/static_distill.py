"""Distil a static (embedding bag) model from any sentence encoder, as model2vec does.

Every token of the encoder's vocabulary goes through the model on its own (`[CLS] token [SEP]`, the
model's own pooling and dense layers), PCA brings the vectors down to `dim`, and each row is weighted
by `log(1 + rank)` (Zipf: frequent tokens weigh less in the mean). The result is a `SentenceEncoder`
whose first module is a `StaticEmbedding` with the encoder's tokenizer, saved in the
sentence-transformers layout; it encodes a hundred or more times faster than its source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch
from tqdm.auto import tqdm

from ..encoders.dense.encoder import SentenceEncoder
from ..modules import Normalize, StaticEmbedding

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# Inputs the distilled model keeps (tokens, no special tokens), as model2vec does by default.
DEFAULT_MAX_LENGTH = 512


def distill_static(
    encoder: SentenceEncoder,
    vocabulary: Sequence[str] | None = None,
    dim: int | None = 256,
    pca: bool = True,
    zipf: bool = True,
    *,
    token_counts: Mapping[str, int] | None = None,
    max_vocab: int | None = None,
    max_length: int | None = DEFAULT_MAX_LENGTH,
    batch_size: int = 512,
    show_progress_bar: bool = True,
) -> SentenceEncoder:
    """A static model distilled from `encoder` (a transformer model).

    - `vocabulary`: extra words, each embedded as text and added to the tokenizer as a whole token.
    - `dim`: the PCA output size (at most the source dimension); `pca=False` keeps the raw vectors.
    - `zipf`: weight rows by `log(1 + rank)`, rank from `token_counts` (most frequent first) or,
      without counts, the token id order (subword vocabularies are built roughly by frequency).
    - `max_vocab`: distil only the first N token ids (the rest get zero rows): for quick tests.
    - `max_length`: tokens the static model keeps per input (None: no truncation).

    The distilled model ends in Normalize when `encoder` does, keeps its similarity function and
    drops its prompts (a prompt would only add the same tokens to every bag).
    """
    from tokenizers import AddedToken, Tokenizer

    transformer = encoder.transformer
    hf_tokenizer = transformer.tokenizer
    backend = getattr(hf_tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ValueError("distill_static needs a fast (Rust) tokenizer")
    tokenizer = Tokenizer.from_str(backend.to_str())  # a copy: the encoder's own stays untouched
    tokenizer.no_padding()
    tokenizer.no_truncation()
    vocab_size = tokenizer.get_vocab_size()
    distilled = vocab_size if max_vocab is None else max(0, min(vocab_size, max_vocab))
    prefix, suffix = _special_tokens(tokenizer)
    inputs = [[*prefix, i, *suffix] for i in range(distilled)]

    words = [w for w in dict.fromkeys(vocabulary or []) if w and tokenizer.token_to_id(w) is None]
    if words:
        inputs += transformer.tokenize(words)["input_ids"]
        tokenizer.add_tokens([AddedToken(w, single_word=True, normalized=True) for w in words])
    ids = list(range(distilled)) + [tokenizer.token_to_id(w) or 0 for w in words]

    vectors = _embed_ids(encoder, inputs, batch_size, show_progress_bar)
    if pca:
        vectors = pca_project(vectors, dim or vectors.shape[1])
    if zipf:
        vectors *= _zipf_weights(tokenizer, ids, token_counts)[:, None]
    table = np.zeros((tokenizer.get_vocab_size(), vectors.shape[1]), dtype=np.float32)
    table[ids] = vectors

    if max_length:
        tokenizer.enable_truncation(max_length)
    else:
        tokenizer.no_truncation()
    modules: list[StaticEmbedding | Normalize] = [StaticEmbedding(tokenizer, embedding_weights=table)]
    if encoder.normalizes:
        modules.append(Normalize())
    return SentenceEncoder(modules, similarity_fn_name=encoder.similarity_fn_name, device="cpu")


def _special_tokens(tokenizer: Tokenizer) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a text's tokens ([CLS] and [SEP], <s> and </s>)."""
    plain = tokenizer.encode("a", add_special_tokens=False).ids
    full = tokenizer.encode("a", add_special_tokens=True).ids
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return full[:start], full[start + len(plain) :]
    raise ValueError("cannot tell which special tokens the tokenizer adds around a text")


def without_normalize(encoder: SentenceEncoder) -> SentenceEncoder:
    """`encoder`'s pipeline minus a final Normalize (the same modules, shared): a vector's length
    carries its weight into PCA."""
    modules = list(encoder)
    if modules and isinstance(modules[-1], Normalize):
        modules = modules[:-1]
    return SentenceEncoder(modules, similarity_fn_name=encoder.similarity_fn_name, device=encoder.device)  # type: ignore[arg-type]


def _embed_ids(
    encoder: SentenceEncoder, inputs: list[list[int]], batch_size: int, show_progress_bar: bool
) -> np.ndarray:
    """One vector per input (token ids with special tokens) through the encoder's pipeline, minus a
    final Normalize: a token's vector length carries its weight into PCA."""
    body = without_normalize(encoder)
    out = np.zeros((len(inputs), body.get_embedding_dimension()), dtype=np.float32)
    bar = tqdm(total=len(inputs), desc="Distilling", unit="token", disable=not show_progress_bar)
    with bar:
        for start in range(0, len(inputs), batch_size):
            chunk = inputs[start : start + batch_size]
            out[start : start + len(chunk)] = body.encode_tokenized(
                {"input_ids": chunk}, batch_size=batch_size
            )
            bar.update(len(chunk))
    return out


def pca_project(vectors: np.ndarray, dim: int) -> np.ndarray:
    """Center and project onto the top `dim` principal components (eigenvectors of the covariance)."""
    dim = min(dim, vectors.shape[1])
    x = torch.from_numpy(vectors).double()
    x -= x.mean(dim=0)
    _, components = torch.linalg.eigh(x.T @ x)  # ascending eigenvalues
    top = components[:, -dim:].flip(1)
    projected: np.ndarray = (x @ top).float().numpy()
    return projected


def _zipf_weights(tokenizer: Tokenizer, ids: list[int], counts: Mapping[str, int] | None) -> np.ndarray:
    """`log(1 + rank)` per row (rank from 1): by count, most frequent first, else by token id."""
    if counts is None:
        ranks = np.arange(1, len(ids) + 1, dtype=np.float64)
    else:
        seen = [-counts.get(tokenizer.id_to_token(i) or "", 0) for i in ids]
        order = np.argsort(np.asarray(seen), kind="stable")  # ties (and unseen tokens) keep id order
        ranks = np.empty(len(ids), dtype=np.float64)
        ranks[order] = np.arange(1, len(ids) + 1)
    weights: np.ndarray = np.log1p(ranks).astype(np.float32)
    return weights
