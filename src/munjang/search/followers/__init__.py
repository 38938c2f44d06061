"""In-process indexes that follow a store, for a backend that does not retrieve by itself: dense
(mapped HNSW segments and exact matrices, with the tail since the last save), BM25 (segments saved
beside a folder collection) and the extra retrievers' vectors."""
