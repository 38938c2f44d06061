"""A persistent collection: `Collection` (collection.py), its searches (search.py), its write-side
encoding (encoding.py), documents into passages (passages.py, chunking.py, late_chunking.py,
sections.py), the extra retrievers (retrievers.py and the files it names), results and reranking.
"""
