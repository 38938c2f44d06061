"""A collection's multi-vector (ColBERT) retriever: every passage's token matrix, ranked by MaxSim.

A collection created with `multi_vector_model=...` records {"model", "dim", "similarity"} under
"multi_vector" in its configuration. Each passage's token matrix (the document side of the model) is
computed when it is added and written to the store's `token_vectors` table, as float16, in the same
transaction as the passage, cached by text hash like dense vectors. The index (`token_index.py`) is
derived from the store and caught up by watermark, so a writer killed at any moment leaves nothing to
repair; a backend that searches token matrices itself (Qdrant) answers in its place: the backend
hands out the index (`Backend.retriever("multi_vector")`). Queries go through the model's query
side (`encode_query`: query markers and expansion).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backends.base import Backend, CollectionError, Retriever, token_cache_key
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
    {"model", "dim", "similarity"}, where the backend keeps token vectors (`Backend.retrievers`);
    the model must be named, so reopening finds it."""
    if model is None:
        raise ValueError(
            "multi_vector_encoder needs multi_vector_model: the folder or hub id the collection reloads it by"
        )
    if "multi_vector" not in backend.retrievers:
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
    """The multi-vector model (loaded on first need), its cache key in the store, and the index that
    searches its token matrices (`engine`: the backend's, `Backend.retriever("multi_vector")`)."""

    name = "multi_vector"

    def __init__(
        self, config: dict[str, Any], store: Any, encoder: Any, device: str | None, backend: Backend
    ) -> None:
        self.engine: Retriever = backend.retriever("multi_vector", store, config)
        tokens = config["multi_vector"]
        self.model, self.dim = str(tokens["model"]), int(tokens["dim"])
        self.mean = tokens.get("similarity", "maxsim") == "meanmaxsim"
        self.key = token_cache_key(self.model)
        self._encoder = encoder
        self._device = device

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

    def encode_queries(self, queries: Sequence[str]) -> list[np.ndarray]:
        return [np.asarray(q, dtype=np.float32) for q in self.encoder.encode_query(list(queries))]

    def stored(self, store: Any, labels: np.ndarray) -> list[np.ndarray | None]:
        """The stored token matrix of each label (None where not held)."""
        found: list[np.ndarray | None] = self.engine.stored(store, [int(x) for x in labels])
        return found

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        """Disagreement between the index, caught up, and the stored passages."""
        return self.engine.problems(store, labels)
