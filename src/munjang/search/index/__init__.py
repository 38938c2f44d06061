"""Array indexes: vectors, token lists or token matrices in, labels and scores out.

Exact and HNSW dense search (exact.py, ann.py), binary / int8 quantization (quantization.py,
quantized_index.py), BM25 with Korean morphology (tokenizers.py, bm25.py, incremental_bm25.py),
score fusion (fusion.py), SPLADE postings (sparse_index.py), late interaction (token_index.py,
plaid.py, muvera.py). Nothing here knows a store or a model.
"""

from . import native  # noqa: F401  (before usearch: see native.py)
