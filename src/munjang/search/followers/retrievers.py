"""The in-process sparse and token (ColBERT) indexes of a collection, kept in step with its store:
the fallback for backends that do not retrieve these themselves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..index.sparse_index import SparseIndex
from ..index.token_index import TokenIndex
from .dense import StoreFollower


class LiveSparseIndex(StoreFollower):
    """The collection's sparse index: a `SparseIndex` and the store watermark it has applied."""

    def __init__(self, model: str, dim: int) -> None:
        super().__init__(model, dim, SparseIndex(dim))

    def _added(self, store: Any, after: int) -> Any:
        return store.sparse_after(self.model, after)


class LiveTokenIndex(StoreFollower):
    """The collection's token index: a `TokenIndex` and the store watermark it has applied."""

    def __init__(self, model: str, dim: int) -> None:
        super().__init__(model, dim, TokenIndex(dim))

    def _added(self, store: Any, after: int) -> Any:
        return store.token_vectors_after(self.model, after)

    def search(
        self, store: Any, queries: Sequence[np.ndarray], k: int, allowed: np.ndarray | None, mean: bool
    ) -> list[list[tuple[int, float]]]:
        """Catch up with the store, then `TokenIndex.search`."""
        self.sync(store)
        return self.index.search(queries, k, allowed, mean)
