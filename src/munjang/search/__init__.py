"""Search: exact and approximate dense indexes, BM25 with Korean morphology, hybrid fusion, reranking,
and persistent collections that hold documents, metadata and every index in one folder.

Everything below `Collection` works on arrays and token lists and knows nothing about the model.
"""

from typing import TYPE_CHECKING

from .._util.lazy_names import lazy_names
from .backends.base import (
    CollectionBusyError,
    CollectionError,
    CollectionNotFoundError,
    Document,
    ReadOnlyError,
    StorageFullError,
)

if TYPE_CHECKING:
    from .backends.filters import compile_filter
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

# Each public name and the module it lives in, imported on first use: a reader that opens a
# collection loads only what its searches need.
_LAZY = {
    "AddResult": "collection.collection",
    "Collection": "collection.collection",
    "ChunkingConfig": "collection.passages",
    "RerankHit": "collection.rerank",
    "RetrieveAndRerank": "collection.rerank",
    "SearchHit": "collection.results",
    "HNSWIndex": "index.ann",
    "IndexFileError": "index.ann",
    "BM25Index": "index.bm25",
    "LexicalHit": "index.bm25",
    "ExactIndex": "index.exact",
    "Hit": "index.exact",
    "semantic_search": "index.exact",
    "top_k_exact": "index.exact",
    "FusedHit": "index.fusion",
    "fuse": "index.fusion",
    "normalize_scores": "index.fusion",
    "reciprocal_rank_fusion": "index.fusion",
    "weighted_fusion": "index.fusion",
    "hamming_distances": "index.quantization",
    "quantize_embeddings": "index.quantization",
    "BinaryIndex": "index.quantized_index",
    "Int8Index": "index.quantized_index",
    "AutoTokenizer": "index.tokenizers",
    "KiwiTokenizer": "index.tokenizers",
    "Tokenizer": "index.tokenizers",
    "WordTokenizer": "index.tokenizers",
    "get_tokenizer": "index.tokenizers",
    "compile_filter": "backends.filters",
}

__all__ = [
    "AddResult",
    "AutoTokenizer",
    "BM25Index",
    "BinaryIndex",
    "ChunkingConfig",
    "Collection",
    "CollectionBusyError",
    "CollectionError",
    "CollectionNotFoundError",
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


__getattr__ = lazy_names(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
