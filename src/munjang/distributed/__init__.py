"""Encoding at scale: a corpus of many files into resumable parquet shards, on a Ray cluster.

`encode_with_ray` needs the `ray` extra (`pip install 'munjang[ray]'`); nothing here imports Ray until
it is called. `read_embeddings` reads a finished output folder back as (ids, matrix).
"""

from ..errors import MissingExtraError
from .corpus import Corpus, expand_inputs, read_corpus
from .ray_encode import RayEncodeError, encode_with_ray, place_workers
from .shards import EmbeddingsFolderError, read_embeddings, read_manifest

__all__ = [
    "Corpus",
    "EmbeddingsFolderError",
    "MissingExtraError",
    "RayEncodeError",
    "encode_with_ray",
    "expand_inputs",
    "place_workers",
    "read_corpus",
    "read_embeddings",
    "read_manifest",
]
