"""Where a collection lives: the contract and its vocabulary (`base.py`: `Store`, `Retriever`,
`DenseSearch`, `LexicalSearch`, `Backend`, and the `Filter` and `Queries` a retriever is handed), the
metadata filter language compiled to SQL (`filters.py`), disk faults (`disk_faults.py`), the factory
that picks a backend by URL scheme (`schemes.py`), and one package per backend, each owning its
store, its retrievers and its faults and handing its retrievers out by kind (`Backend.retriever`):
`folder/` (SQLite beside mapped index files, the default, retrieving through the in-process
followers of `search/followers/`), `postgres/` (PostgreSQL + pgvector: everything in SQL) and
`qdrant/` (Qdrant, local mode or a server). A new backend is one package here and one line in
`schemes.SCHEMES`."""
