"""bge-m3's sparse and ColBERT heads seen as a sparse encoder and as a multi-vector encoder.

`load_sparse_encoder` and `load_multi_vector_encoder` return these for a bge-m3 folder, so the
sparse route, the multi-vector routes and a collection's sparse retriever take bge-m3 as they take
a SPLADE or ColBERT model. bge-m3 has no query/document asymmetry: both sides encode the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ...errors import InputTooLongError
from .encoder import M3Encoder, colbert_scores


def _texts(sentences: Sequence[str] | str) -> tuple[list[str], bool]:
    single = isinstance(sentences, str)
    texts: list[str] = [sentences] if single else list(sentences)  # type: ignore[list-item]
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"sentences[{i}] is {type(text).__name__}, not str")
    return texts, single


def _check_lengths(model: M3Encoder, texts: list[str]) -> None:
    limit = model.transformer.max_seq_length
    for i, ids in enumerate(model.transformer.tokenize(texts, truncate=False)["input_ids"]):
        if len(ids) > limit:
            raise InputTooLongError(
                f"sentences[{i}] has {len(ids)} tokens, over the model's limit of {limit}; "
                "shorten it or encode with truncate=True"
            )


class M3SparseView:
    """bge-m3's lexical weights as sparse vectors over the vocabulary (what SparseEncoder returns)."""

    similarity_fn_name = "dot"

    def __init__(self, model: M3Encoder, batch_size: int = 32) -> None:
        self.model = model
        self.batch_size = batch_size

    @property
    def tokenizer(self) -> Any:
        return self.model.encoder.tokenizer

    @property
    def max_seq_length(self) -> int:
        return self.model.transformer.max_seq_length

    @property
    def device(self) -> torch.device:
        return self.model.encoder.device

    def get_embedding_dimension(self) -> int:
        return int(self.model.transformer.auto_model.config.vocab_size)

    def describe(self) -> dict[str, Any]:
        return {"architecture": "bge-m3 lexical weights", "vocab_size": self.get_embedding_dimension()}

    def encode(
        self,
        sentences: Sequence[str] | str,
        *,
        max_active_dims: int | None = None,
        truncate: bool = True,
        **_: Any,
    ) -> torch.Tensor:
        """Rows x vocabulary sparse COO (one text: 1-D), the highest weight of each token id."""
        texts, single = _texts(sentences)
        if not truncate:
            _check_lengths(self.model, texts)
        weights = self.model.encode(texts, dense=False, colbert=False, batch_size=self.batch_size).sparse
        assert weights is not None
        rows, cols, values = [], [], []
        for r, row in enumerate(weights):
            items = (
                sorted(row.items(), key=lambda kv: -kv[1])[:max_active_dims]
                if max_active_dims
                else row.items()
            )
            for token, weight in items:
                rows.append(r)
                cols.append(token)
                values.append(weight)
        vocab = self.get_embedding_dimension()
        shape: tuple[int, ...]
        if single:
            index, shape = torch.tensor([cols], dtype=torch.int64), (vocab,)
        else:
            index, shape = torch.tensor([rows, cols], dtype=torch.int64).reshape(2, -1), (len(texts), vocab)
        values_t = torch.tensor(values, dtype=torch.float32)
        return torch.sparse_coo_tensor(index, values_t, shape, check_invariants=True).coalesce()

    def encode_query(self, sentences: Sequence[str] | str, **kwargs: Any) -> torch.Tensor:
        return self.encode(sentences, **kwargs)

    def encode_document(self, sentences: Sequence[str] | str, **kwargs: Any) -> torch.Tensor:
        return self.encode(sentences, **kwargs)


class M3MultiVectorView:
    """bge-m3's ColBERT vectors per text (what MultiVectorEncoder returns), scored as bge-m3 scores
    them: MaxSim averaged over the query's tokens."""

    def __init__(self, model: M3Encoder, batch_size: int = 32) -> None:
        self.model = model
        self.batch_size = batch_size

    @property
    def tokenizer(self) -> Any:
        return self.model.encoder.tokenizer

    @property
    def device(self) -> torch.device:
        return self.model.encoder.device

    def get_embedding_dimension(self) -> int:
        return self.model.colbert_dimension

    def _encode(self, sentences: Sequence[str] | str) -> list[np.ndarray]:
        texts, _ = _texts(sentences)
        vectors = self.model.encode(texts, dense=False, sparse=False, batch_size=self.batch_size).colbert
        assert vectors is not None
        return vectors

    def encode_query(self, sentences: Sequence[str] | str, **_: Any) -> list[np.ndarray]:
        return self._encode(sentences)

    def encode_document(self, sentences: Sequence[str] | str, **_: Any) -> list[np.ndarray]:
        return self._encode(sentences)

    def similarity(self, queries: Any, documents: Any) -> np.ndarray:
        return colbert_scores(queries, documents)
