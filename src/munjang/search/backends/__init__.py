"""Where a collection lives: the contract and its vocabulary (base.py), the factory that picks a
backend (backends.py), the backends (folder.py + sqlite_store.py; postgres.py + postgres_store.py +
postgres_dense.py), and the in-process indexes that follow a store for a backend that does not
retrieve by itself (live_index.py, live_retrievers.py). Metadata filters and their compiled forms:
filters.py. Disk faults: disk_faults.py.
"""
