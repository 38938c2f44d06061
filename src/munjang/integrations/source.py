"""Where the adapters' vectors come from: a local `SentenceEncoder` or a munjang server `Client`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class EmbeddingSource:
    """Encodes texts with `encoder` (local) or `client` (server, model `model`), with the query or
    document prompt of the model where it has one (e5: "query" / "passage")."""

    def __init__(
        self,
        encoder: Any = None,
        *,
        client: Any = None,
        model: str | None = None,
        query_prompt_name: str | None = None,
        document_prompt_name: str | None = None,
        normalize: bool = True,
    ) -> None:
        if (encoder is None) == (client is None):
            raise ValueError("pass either a local encoder or a munjang.Client, not both or neither")
        self.encoder, self.client, self.model = encoder, client, model
        prompts = getattr(encoder, "prompts", {}) or {}
        self.query_prompt_name = query_prompt_name or ("query" if "query" in prompts else None)
        self.document_prompt_name = document_prompt_name or ("passage" if "passage" in prompts else None)
        self.normalize = normalize

    def embed(self, texts: Sequence[str], prompt_name: str | None) -> np.ndarray:
        if self.encoder is not None:
            vectors = self.encoder.encode(
                list(texts),
                prompt_name=prompt_name,
                normalize_embeddings=self.normalize,
                show_progress_bar=False,
            )
        else:
            vectors = self.client.embed(list(texts), model=self.model, prompt_name=prompt_name)
            if self.normalize:
                vectors = vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        return np.asarray(vectors, dtype=np.float32)

    def documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        rows: list[list[float]] = self.embed(texts, self.document_prompt_name).tolist()
        return rows

    def query(self, text: str) -> list[float]:
        row: list[float] = self.embed([text], self.query_prompt_name)[0].tolist()
        return row
