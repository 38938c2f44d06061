"""Search: exact semantic search over embeddings (arrays only, no model), and retrieve-and-rerank,
which combines a bi-encoder and a cross-encoder given to it."""

from .exact import Hit, semantic_search
from .rerank import RerankHit, RetrieveAndRerank

__all__ = ["Hit", "RerankHit", "RetrieveAndRerank", "semantic_search"]
