"""PostgreSQL + pgvector: records, dense (HNSW segments merged in the background), BM25 and SPLADE
postings and filters all in SQL, nothing per passage in the process."""
