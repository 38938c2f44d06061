"""Search: exact and approximate dense indexes, BM25 with Korean morphology, hybrid fusion, reranking,
and persistent collections that hold documents, metadata and every index in one folder.

Everything below `Collection` works on arrays and token lists and knows nothing about the model.
"""

from .collection.collection import AddResult, Collection
from .collection.passages import ChunkingConfig
from .collection.rerank import RerankHit, RetrieveAndRerank
from .collection.results import SearchHit
from .index.ann import HNSWIndex, IndexFileError
from .index.bm25 import BM25Index, LexicalHit
from .index.exact import ExactIndex, Hit, semantic_search, top_k_exact
from .index.fusion import FusedHit, fuse, normalize_scores, reciprocal_rank_fusion, weighted_fusion
from .index.quantization import hamming_distances, quantize_embeddings
from .index.quantized_index import BinaryIndex, Int8Index
from .index.tokenizers import AutoTokenizer, KiwiTokenizer, Tokenizer, WordTokenizer, get_tokenizer
from .storage.base import CollectionError, Document, ReadOnlyError, StorageFullError
from .storage.filters import compile_filter

__all__ = [
    "AddResult",
    "AutoTokenizer",
    "BM25Index",
    "BinaryIndex",
    "ChunkingConfig",
    "Collection",
    "CollectionError",
    "Document",
    "ExactIndex",
    "FusedHit",
    "HNSWIndex",
    "Hit",
    "IndexFileError",
    "Int8Index",
    "KiwiTokenizer",
    "LexicalHit",
    "ReadOnlyError",
    "RerankHit",
    "RetrieveAndRerank",
    "SearchHit",
    "StorageFullError",
    "Tokenizer",
    "WordTokenizer",
    "compile_filter",
    "fuse",
    "get_tokenizer",
    "hamming_distances",
    "normalize_scores",
    "quantize_embeddings",
    "reciprocal_rank_fusion",
    "semantic_search",
    "top_k_exact",
    "weighted_fusion",
]
