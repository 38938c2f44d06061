"""Qdrant (local mode or a server): the records in a SQLite store beside it, the points (dense, BM25,
SPLADE and ColBERT vectors) and their native filters in Qdrant."""
