"""qdrant."""
