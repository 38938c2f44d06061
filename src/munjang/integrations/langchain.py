"""LangChain `Embeddings` backed by munjang (a local encoder or a munjang server)."""

from __future__ import annotations

from typing import Any

try:
    from langchain_core.embeddings import Embeddings
except ImportError as e:  # pragma: no cover - only without the optional package
    raise ImportError("the LangChain adapter needs langchain-core: pip install langchain-core") from e

from .source import EmbeddingSource


class MunjangEmbeddings(Embeddings):
    """`MunjangEmbeddings(munjang.load_encoder(...))` or `MunjangEmbeddings(client=munjang.Client(url))`.

    Documents get the model's document prompt and queries its query prompt (e5: "passage: " /
    "query: "), and vectors are unit length unless `normalize=False`.
    """

    def __init__(self, encoder: Any = None, **options: Any) -> None:
        self.source = EmbeddingSource(encoder, **options)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.source.documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.source.query(text)
