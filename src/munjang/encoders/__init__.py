"""Encoders, one package per model kind, each shaped alike (the model class, its loader, its parts):
`dense/` (SentenceEncoder), `sparse/` (SPLADE), `m3/` (bge-m3's three outputs), `multi_vector/`
(ColBERT), `cross/` (cross-encoders and LLM rerankers), `static/` (static models' queries in numpy),
`remote/` (an OpenAI-compatible API). Beside them, what the kinds share: the sentence-transformers
folder layout (`formats.py`, `settings.py`) and the `Embedder` protocol (`embedder.py`)."""
