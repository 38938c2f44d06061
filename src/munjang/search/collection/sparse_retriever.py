"""A collection's third retriever beside BM25 and dense: sparse (SPLADE) vectors in an inverted index.

A collection created with `sparse_model=...` records {"model", "dim"} under "sparse" in its
configuration. Each passage's sparse vector is computed when it is added (the document side of the
model: its MLM path, for inference-free models too) and written to the store in the same
transaction as the passage, cached by text hash like dense vectors. A backend that answers sparse
retrieval itself (`ProvidesSparse`) keeps its postings in those transactions and scores, filters and
ranks in its own query; otherwise the inverted index (`sparse_index.py`) is derived from the store
and caught up by watermark, so a writer killed at any moment leaves nothing to repair. Queries go
through the model's query side (`encode_query`), which an inference-free model answers with a
tokenizer and a table lookup.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..backends.base import (
    CollectionError,
    FiltersSparseNatively,
    HandsBackVectors,
    KeepsExtraVectors,
    ProvidesSparse,
    SparseSearch,
    SparseVectors,
    sparse_cache_key,
)
from ..followers.dense import label_problems
from ..followers.retrievers import LiveSparseIndex
from ..index.sparse_index import rows_to_csr
from .inputs import model_key

# Texts per sparse-encoding call during a write (MLM logits are tokens x vocabulary floats).
ENCODE_BATCH = 32


def sparse_setup(
    sparse_model: str | os.PathLike[str] | None, encoder: Any, backend: Any, device: str | None
) -> tuple[Any, dict[str, Any]]:
    """The sparse model (loaded unless given) and what a new collection records about it: {"model",
    "dim"}, where the backend keeps sparse vectors (`KeepsExtraVectors`); the model must be named,
    so reopening finds it."""
    if sparse_model is None:
        raise ValueError(
            "sparse_encoder needs sparse_model: the folder or hub id the collection reloads it by"
        )
    if not (isinstance(backend, KeepsExtraVectors) and backend.keeps_vectors("sparse")):
        raise ValueError(
            f"a sparse retriever needs a backend that keeps sparse vectors; {backend.kind} keeps none"
        )
    if encoder is None:
        from ...encoders.sparse.encoder import load_sparse_encoder

        encoder = load_sparse_encoder(str(sparse_model), device=device)
    return encoder, {"model": model_key(sparse_model), "dim": int(encoder.get_embedding_dimension())}


class SparseRetriever:
    """The sparse model (loaded on first need), its cache key in the store, and the index: the
    backend's own (`own`, filtered in its query) or the in-process one (`live`)."""

    name = "sparse"

    def __init__(
        self,
        config: dict[str, Any],
        store: Any,
        encoder: Any = None,
        device: str | None = None,
        backend: Any = None,
    ) -> None:
        self.own: SparseSearch | None = (
            backend.sparse_index(store, config) if isinstance(backend, ProvidesSparse) else None
        )
        if not isinstance(store, SparseVectors):
            raise CollectionError(
                "this collection's backend keeps no sparse vectors (use a folder collection)"
            )
        self.model, self.dim = str(config["model"]), int(config["dim"])
        self.key = sparse_cache_key(self.model)
        self._encoder = encoder
        self._device = device
        self.live = LiveSparseIndex(self.key, self.dim)

    @property
    def sql_filters(self) -> bool:
        """Whether `search` applies the compiled filter itself (no allowed-labels list needed)."""
        return self.own is not None

    def native_filter(self, spec: Any) -> Any | None:
        """The filter compiled for the backend's own engine, where its search takes one (else None)."""
        if isinstance(self.own, FiltersSparseNatively):
            return self.own.native_filter(spec)
        return None

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from ...encoders.sparse.encoder import load_sparse_encoder

            self._encoder = load_sparse_encoder(self.model, device=self._device)
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

    def search(
        self,
        store: Any,
        queries: Sequence[str],
        k: int,
        allowed: np.ndarray | None,
        where: tuple[str, list[Any]] | None = None,
        native: Any = None,
    ) -> list[list[tuple[int, float]]]:
        """Top-k (label, dot-product score) per query, among `allowed` labels when given; the
        backend's own index takes the compiled filter `where` instead, or `native`, the filter
        compiled for its engine (`native_filter`)."""
        from ...encoders.sparse.encoder import sparse_rows

        if self.own is not None:
            if native is None and allowed is not None and len(allowed) == 0:
                return [[] for _ in queries]
            rows = sparse_rows(self.encoder.encode_query(list(queries)))
            if native is not None and isinstance(self.own, FiltersSparseNatively):
                return self.own.search_native(rows, k, native)
            if where is None and allowed is not None:
                return self.own.search(rows, k, allowed)
            return self.own.search_where(rows, k, where)
        self.live.sync(store)
        if (allowed is not None and len(allowed) == 0) or not len(self.live.index):
            return [[] for _ in queries]
        matrix: sp.csr_matrix = rows_to_csr(sparse_rows(self.encoder.encode_query(list(queries))), self.dim)
        return self.live.index.search(matrix, k, allowed)

    def stored(self, store: Any, labels: np.ndarray) -> list[dict[int, float]]:
        """The stored vector of each label as {token id: weight}: the backend's, or the live index's."""
        if isinstance(self.own, HandsBackVectors):
            found: list[dict[int, float]] = self.own.stored([int(x) for x in labels])
            return found
        self.live.sync(store)
        return [self.live.index.vector(int(x)) for x in labels]

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        """Disagreement between the index, caught up, and the stored passages."""
        if self.own is not None:
            return self.own.problems(labels)
        self.live.sync(store)
        return label_problems("sparse index", self.live.index.ids(), labels)
