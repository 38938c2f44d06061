"""Search over embeddings. Works on arrays only: it knows nothing about the model."""

from .exact import Hit, semantic_search

__all__ = ["Hit", "semantic_search"]
