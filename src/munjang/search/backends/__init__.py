"""Where a collection lives: the contract and its vocabulary (base.py: `Store`, `Retriever`,
`DenseSearch`, `LexicalSearch`, `Backend`, and the `Filter` and `Queries` a retriever is handed),
the factory that picks a backend (schemes.py), the backends (folder/, postgres/, qdrant/), each
handing out its retrievers by kind (`Backend.retriever`): its own searches, or the in-process
indexes that follow a store (`search/followers/`). Metadata filters compiled to SQL: filters.py.
Disk faults: disk_faults.py.
"""
