"""The default backend: a collection in a folder, its records in SQLite (`sqlite_store.py`) and its
indexes in files beside them, followed in process (`munjang.search.followers`)."""
