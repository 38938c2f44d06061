"""LlamaIndex `BaseEmbedding` backed by munjang (a local encoder or a munjang server)."""

from __future__ import annotations

from typing import Any

try:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from pydantic import PrivateAttr
except ImportError as e:  # pragma: no cover - only without the optional package
    raise ImportError("the LlamaIndex adapter needs llama-index-core: pip install llama-index-core") from e

from .source import EmbeddingSource


class MunjangEmbedding(BaseEmbedding):
    """`MunjangEmbedding(encoder=load_encoder(...))` or `MunjangEmbedding(client=munjang.Client(url))`.

    Documents get the model's document prompt and queries its query prompt; vectors are unit length.
    """

    _source: EmbeddingSource = PrivateAttr()

    def __init__(
        self, encoder: Any = None, *, client: Any = None, model: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(model_name=model or "munjang", **kwargs)
        self._source = EmbeddingSource(encoder, client=client, model=model)

    @classmethod
    def class_name(cls) -> str:
        return "MunjangEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._source.query(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._source.documents([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._source.documents(texts)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embedding(text)
