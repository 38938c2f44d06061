"""The in-process sparse and token (ColBERT) indexes of a collection, kept in step with its store:
the fallback for backends that do not retrieve these themselves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backends.base import Filter, Queries, TopK
from ..index.sparse_index import SparseIndex, rows_to_csr
from ..index.token_index import TokenIndex
from .dense import StoreFollower, label_problems


class LiveSparseIndex(StoreFollower):
    """The collection's sparse index: a `SparseIndex` and the store watermark it has applied.
    `model`: the store's cache key of the sparse model's vectors."""

    def __init__(self, model: str, dim: int) -> None:
        super().__init__(model, dim, SparseIndex(dim))

    def _added(self, store: Any, after: int) -> Any:
        return store.sparse_after(self.model, after)

    def retrieve(self, store: Any, queries: Queries, k: int, filter: Filter | None) -> TopK:
        """Caught up, the top-k (label, dot product) per query row (token ids, weights), among the
        labels `filter` allows."""
        self.sync(store)
        allowed = None if filter is None else filter.allowed
        if (allowed is not None and len(allowed) == 0) or not len(self.index):
            return queries.none()
        return self.index.search(rows_to_csr(queries.encoded, self.dim), k, allowed)

    def stored(self, store: Any, labels: Sequence[int]) -> list[dict[int, float]]:
        """Each label's vector as {token id: weight}."""
        self.sync(store)
        return [self.index.vector(int(x)) for x in labels]

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        self.sync(store)
        return label_problems("sparse index", self.index.ids(), labels)


class LiveTokenIndex(StoreFollower):
    """The collection's token index: a `TokenIndex` and the store watermark it has applied.
    `model`: the store's cache key of the model's token matrices; `mean`: MeanMaxSim (bge-m3)."""

    def __init__(self, model: str, dim: int, mean: bool = False) -> None:
        super().__init__(model, dim, TokenIndex(dim))
        self.mean = mean

    def _added(self, store: Any, after: int) -> Any:
        return store.token_vectors_after(self.model, after)

    def retrieve(self, store: Any, queries: Queries, k: int, filter: Filter | None) -> TopK:
        """Caught up, the top-k (label, MaxSim) per query matrix, among the labels `filter` allows."""
        self.sync(store)
        allowed = None if filter is None else filter.allowed
        if (allowed is not None and len(allowed) == 0) or not len(self.index):
            return queries.none()
        return self.search(store, queries.encoded, k, allowed, self.mean)

    def stored(self, store: Any, labels: Sequence[int]) -> list[np.ndarray | None]:
        """Each label's token matrix (None where not held)."""
        self.sync(store)
        return [self.index.matrix(int(x)) for x in labels]

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        self.sync(store)
        return label_problems("multi-vector index", self.index.ids(), labels)

    def search(
        self, store: Any, queries: Sequence[np.ndarray], k: int, allowed: np.ndarray | None, mean: bool
    ) -> list[list[tuple[int, float]]]:
        """Catch up with the store, then `TokenIndex.search`."""
        self.sync(store)
        return self.index.search(queries, k, allowed, mean)
