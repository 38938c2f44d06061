"""A collection's multi-vector (ColBERT) retriever: every passage's token matrix, ranked by MaxSim.

A collection created with `multi_vector_model=...` records {"model", "dim", "similarity"} under
"multi_vector" in its configuration. Each passage's token matrix (the document side of the model) is
computed when it is added and written to the store's `token_vectors` table, as float16, in the same
transaction as the passage, cached by text hash like dense vectors. The index (`token_index.py`) is
derived from the store and caught up by watermark, so a writer killed at any moment leaves nothing to
repair; a backend that searches token matrices itself (`ProvidesMultiVector`: Qdrant) answers in its
place. Queries go through the model's query side (`encode_query`: query markers and expansion).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backends.base import (
    CollectionError,
    FiltersTokensNatively,
    HandsBackVectors,
    KeepsExtraVectors,
    ProvidesMultiVector,
    TokenSearch,
    TokenVectors,
)
from ..followers.dense import label_problems
from ..followers.retrievers import LiveTokenIndex
from .inputs import model_key

# Texts per encoding call during a write.
ENCODE_BATCH = 32
SIMILARITIES = ("maxsim", "meanmaxsim")


def similarity_of(encoder: Any) -> str:
    """How the model scores: MaxSim (ColBERT) or MeanMaxSim (bge-m3, or a model whose settings say so)."""
    settings = getattr(encoder, "settings", None)
    if settings is not None:
        return "meanmaxsim" if settings.similarity_fn_name == "meanmaxsim" else "maxsim"
    from ...encoders.m3.views import M3MultiVectorView

    return "meanmaxsim" if isinstance(encoder, M3MultiVectorView) else "maxsim"


def multi_vector_setup(
    model: str | os.PathLike[str] | None, encoder: Any, backend: Any, device: str | None
) -> tuple[Any, dict[str, Any]]:
    """The multi-vector model (loaded unless given) and what a new collection records about it:
    {"model", "dim", "similarity"}, where the backend keeps token vectors (`KeepsExtraVectors`);
    the model must be named, so reopening finds it."""
    if model is None:
        raise ValueError(
            "multi_vector_encoder needs multi_vector_model: the folder or hub id the collection reloads it by"
        )
    if not (isinstance(backend, KeepsExtraVectors) and backend.keeps_vectors("multi_vector")):
        raise ValueError(
            f"a multi-vector retriever needs a backend that keeps token vectors (a folder collection); "
            f"{backend.kind} has none yet"
        )
    if encoder is None:
        from ...encoders.multi_vector import load_multi_vector_encoder

        encoder = load_multi_vector_encoder(str(model), device=device)
    config = {"model": model_key(model), "dim": int(encoder.get_embedding_dimension())}
    return encoder, {**config, "similarity": similarity_of(encoder)}


class MultiVectorRetriever:
    """The multi-vector model (loaded on first need), its cache key in the store, and the live index."""

    name = "multi_vector"
    sql_filters = False  # filtered by `allowed` labels or `native`; `where` is not read

    def __init__(
        self,
        config: dict[str, Any],
        store: Any,
        encoder: Any = None,
        device: str | None = None,
        backend: Any = None,
    ) -> None:
        self.own: TokenSearch | None = (
            backend.token_index(store, config) if isinstance(backend, ProvidesMultiVector) else None
        )
        if not isinstance(store, TokenVectors):
            raise CollectionError(
                "this collection's backend keeps no token vectors (use a folder collection)"
            )
        self.model, self.dim = str(config["model"]), int(config["dim"])
        self.mean = config.get("similarity", "maxsim") == "meanmaxsim"
        self.key = f"multi_vector:{self.model}"
        self._encoder = encoder
        self._device = device
        self.live = LiveTokenIndex(self.key, self.dim)

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from ...encoders.multi_vector import load_multi_vector_encoder

            self._encoder = load_multi_vector_encoder(self.model, device=self._device)
            dim = int(self._encoder.get_embedding_dimension())
            if dim != self.dim:
                raise CollectionError(
                    f"{self.model} gives {dim}-d token vectors; this collection holds {self.dim}"
                )
        return self._encoder

    def missing(self, store: Any, hashes: Sequence[str], texts: Sequence[str]) -> tuple[list[str], list[Any]]:
        """The hashes without cached token vectors, and those matrices, computed (document side)."""
        cached = store.cached_token_vectors(self.key, hashes)
        wanted = {h: t for h, t in zip(hashes, texts, strict=True) if h not in cached}
        if not wanted:
            return [], []
        items = list(wanted.values())
        matrices = list(self.encoder.encode_document(items, batch_size=ENCODE_BATCH))
        return list(wanted), [np.asarray(m, dtype=np.float32) for m in matrices]

    def put(self, store: Any, hashes: list[str], matrices: list[Any]) -> None:
        """Write computed token matrices (inside the passage's transaction)."""
        if hashes:
            store.put_token_vectors(self.key, hashes, matrices)

    def native_filter(self, spec: Any) -> Any | None:
        """The filter compiled for the backend's own engine, where its search takes one (else None:
        allowed labels)."""
        if isinstance(self.own, FiltersTokensNatively):
            return self.own.native_filter(spec)
        return None

    def encode_queries(self, queries: Sequence[str]) -> list[np.ndarray]:
        return [np.asarray(q, dtype=np.float32) for q in self.encoder.encode_query(list(queries))]

    def search(
        self,
        store: Any,
        queries: Sequence[str],
        k: int,
        allowed: np.ndarray | None,
        where: Any = None,
        native: Any = None,
    ) -> list[list[tuple[int, float]]]:
        """Top-k (label, MaxSim score) per query, among `allowed` labels when given, or the points
        matching `native` in the backend's own engine."""
        if self.own is not None:
            if native is None and allowed is not None and len(allowed) == 0:
                return [[] for _ in queries]
            matrices = self.encode_queries(queries)
            if native is not None and isinstance(self.own, FiltersTokensNatively):
                return self.own.search_native(matrices, k, native, self.mean)
            return self.own.search(matrices, k, allowed, self.mean)
        self.live.sync(store)
        if (allowed is not None and len(allowed) == 0) or not len(self.live.index):
            return [[] for _ in queries]
        return self.live.search(store, self.encode_queries(queries), k, allowed, self.mean)

    def stored(self, store: Any, labels: np.ndarray) -> list[np.ndarray | None]:
        """The stored token matrix of each label (None where not held): the backend's, or the live
        index's."""
        if isinstance(self.own, HandsBackVectors):
            found: list[np.ndarray | None] = self.own.stored([int(x) for x in labels])
            return found
        self.live.sync(store)
        return [self.live.index.matrix(int(x)) for x in labels]

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        """Disagreement between the index, caught up, and the stored passages."""
        if self.own is not None:
            return self.own.problems(labels)
        self.live.sync(store)
        return label_problems("multi-vector index", self.live.index.ids(), labels)
