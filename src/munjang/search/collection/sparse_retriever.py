"""A collection's third retriever beside BM25 and dense: sparse (SPLADE) vectors in an inverted index.

A collection created with `sparse_model=...` records {"model", "dim"} under "sparse" in its
configuration. Each passage's sparse vector is computed when it is added (the document side of the
model: its MLM path, for inference-free models too) and written to the store in the same
transaction as the passage, cached by text hash like dense vectors. The backend hands out the index
that searches them (`Backend.retriever("sparse")`): PostgreSQL keeps postings in those transactions
and scores, filters and ranks in its own query, Qdrant searches its points; a folder's inverted
index (`sparse_index.py`) is derived from the store and caught up by watermark, so a writer killed
at any moment leaves nothing to repair. Queries go
through the model's query side (`encode_query`), which an inference-free model answers with a
tokenizer and a table lookup.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backends.base import Backend, CollectionError, Retriever, sparse_cache_key
from .inputs import model_key

# Texts per sparse-encoding call during a write (MLM logits are tokens x vocabulary floats).
ENCODE_BATCH = 32


def sparse_setup(
    sparse_model: str | os.PathLike[str] | None, encoder: Any, backend: Any, device: str | None
) -> tuple[Any, dict[str, Any]]:
    """The sparse model (loaded unless given) and what a new collection records about it: {"model",
    "dim"}, where the backend keeps sparse vectors (`Backend.retrievers`); the model must be named,
    so reopening finds it."""
    if sparse_model is None:
        raise ValueError(
            "sparse_encoder needs sparse_model: the folder or hub id the collection reloads it by"
        )
    if "sparse" not in backend.retrievers:
        raise ValueError(
            f"a sparse retriever needs a backend that keeps sparse vectors; {backend.kind} keeps none"
        )
    if encoder is None:
        from ...encoders.embedder import load_sparse_embedder

        encoder = load_sparse_embedder(str(sparse_model), device=device)
    return encoder, {"model": model_key(sparse_model), "dim": int(encoder.get_embedding_dimension())}


class SparseRetriever:
    """The sparse model (loaded on first need), its cache key in the store, and the index that
    searches its vectors (`engine`: the backend's, `Backend.retriever("sparse")`)."""

    name = "sparse"

    def __init__(
        self, config: dict[str, Any], store: Any, encoder: Any, device: str | None, backend: Backend
    ) -> None:
        self.engine: Retriever = backend.retriever("sparse", store, config)
        self.model, self.dim = str(config["sparse"]["model"]), int(config["sparse"]["dim"])
        self.key = sparse_cache_key(self.model)
        self._encoder = encoder
        self._device = device

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from ...encoders.embedder import load_sparse_embedder

            self._encoder = load_sparse_embedder(self.model, device=self._device)
            dim = int(self._encoder.get_embedding_dimension())
            if dim != self.dim:
                raise CollectionError(
                    f"{self.model} gives {dim}-wide sparse vectors; this collection holds {self.dim}"
                )
        return self._encoder

    def missing(self, store: Any, hashes: Sequence[str], texts: Sequence[str]) -> tuple[list[str], list[Any]]:
        """The hashes without a cached sparse vector, and those vectors, computed (document side)."""
        from ...encoders.sparse.encoder import sparse_rows

        cached = store.cached_sparse(self.key, hashes)
        wanted = {h: t for h, t in zip(hashes, texts, strict=True) if h not in cached}
        if not wanted:
            return [], []
        rows: list[Any] = []
        items = list(wanted.values())
        for start in range(0, len(items), ENCODE_BATCH):
            vectors = self.encoder.encode_document(items[start : start + ENCODE_BATCH])
            rows += sparse_rows(vectors)
        return list(wanted), rows

    def put(self, store: Any, hashes: list[str], rows: list[Any]) -> None:
        """Write computed sparse vectors (inside the passage's transaction)."""
        if hashes:
            store.put_sparse(self.key, hashes, rows)

    def encode_queries(self, queries: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """The queries' sparse vectors (token ids, weights), through the model's query side."""
        from ...encoders.sparse.encoder import sparse_rows

        rows: list[tuple[np.ndarray, np.ndarray]] = sparse_rows(self.encoder.encode_query(list(queries)))
        return rows

    def stored(self, store: Any, labels: np.ndarray) -> list[dict[int, float]]:
        """The stored vector of each label as {token id: weight}."""
        found: list[dict[int, float]] = self.engine.stored(store, [int(x) for x in labels])
        return found

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        """Disagreement between the index, caught up, and the stored passages."""
        return self.engine.problems(store, labels)
