"""Where a collection lives: the contract and its vocabulary (`base.py`), the metadata filter language
(`filters.py`), the factory that picks a backend by URL scheme (`schemes.py`), and one package per
backend, each owning its store, its retrievers and its faults: `folder/` (SQLite beside mapped index
files, the default), `postgres/` (PostgreSQL + pgvector: everything in SQL) and `qdrant/` (Qdrant,
local mode or a server). A new backend is one package here and one line in `schemes.SCHEMES`."""
