"""Search: exact and approximate dense indexes, BM25 with Korean morphology, hybrid fusion, reranking,
and persistent collections that hold documents, metadata and every index in one folder.

Everything below `Collection` works on arrays and token lists and knows nothing about the model.
"""

from .ann import HNSWIndex, IndexFileError
from .collection import AddResult, Collection
from .disk_faults import CollectionError, ReadOnlyError, StorageFullError
from .exact import ExactIndex, Hit, semantic_search, top_k_exact
from .filters import compile_filter
from .hybrid import FusedHit, fuse, normalize_scores, reciprocal_rank_fusion, weighted_fusion
from .lexical import BM25Index, LexicalHit
from .passages import ChunkingConfig
from .quantization import hamming_distances, quantize_embeddings
from .quantized_index import BinaryIndex, Int8Index
from .rerank import RerankHit, RetrieveAndRerank
from .results import SearchHit
from .store import Document
from .tokenizers import AutoTokenizer, KiwiTokenizer, Tokenizer, WordTokenizer, get_tokenizer

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
