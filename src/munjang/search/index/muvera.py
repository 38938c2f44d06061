"""MuveraIndex: multi-vector search through one fixed-dimensional vector per document (MUVERA,
Dhulipala et al., 2024), then exact MaxSim on the best candidates.

A fixed-dimensional encoding (FDE) approximates MaxSim by a dot product. For each of `repetitions`
random SimHash partitions of the unit sphere (`bits` hyperplanes, 2^bits buckets), every token is
projected to `proj_dim` dimensions (a random ±1 sketch) and put in its bucket; the query's FDE
block holds the sum of its tokens per bucket, the document's the mean (an empty bucket takes the
document token nearest to it in Hamming distance). The FDE is the concatenation of all blocks:
repetitions x 2^bits x proj_dim values.

Search: exact dot-product top `rerank` over the document FDEs (munjang.search.index.exact), then exact
MaxSim of those on their stored float16 tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...encoders.multi_vector.flat import FlatTokens, maxsim_rows
from ...encoders.multi_vector.maxsim import as_token_matrix
from .exact import top_k_exact


class FixedDimensionalEncoder:
    """The random SimHash partitions and sketches shared by queries and documents."""

    def __init__(
        self, dim: int, repetitions: int = 10, bits: int = 4, proj_dim: int = 16, seed: int = 0
    ) -> None:
        rng = np.random.default_rng(seed)
        self.repetitions, self.bits, self.proj_dim = repetitions, bits, proj_dim
        self.planes = rng.standard_normal((repetitions, dim, bits)).astype(np.float32)
        signs = rng.choice([-1.0, 1.0], size=(repetitions, dim, proj_dim)).astype(np.float32)
        self.sketch = signs / np.sqrt(proj_dim)
        self.buckets = 2**bits

    @property
    def dim(self) -> int:
        return self.repetitions * self.buckets * self.proj_dim

    def _bucket(self, vectors: np.ndarray, r: int) -> np.ndarray:
        bits = (vectors @ self.planes[r]) > 0
        return (bits.astype(np.int64) << np.arange(self.bits)).sum(axis=1)

    def queries(self, queries: Sequence[np.ndarray]) -> np.ndarray:
        out = np.zeros((len(queries), self.dim), np.float32)
        for i, q in enumerate(queries):
            blocks = []
            for r in range(self.repetitions):
                block = np.zeros((self.buckets, self.proj_dim), np.float32)
                np.add.at(block, self._bucket(q, r), q @ self.sketch[r])
                blocks.append(block.ravel())
            out[i] = np.concatenate(blocks)
        return out

    def documents(self, store: FlatTokens, chunk_docs: int = 8192) -> np.ndarray:
        out = np.zeros((len(store), self.dim), np.float32)
        for first in range(0, len(store), chunk_docs):
            last = min(first + chunk_docs, len(store))
            lo, hi = store.offsets[first], store.offsets[last]
            vectors = store.vectors[lo:hi].astype(np.float32)
            owner = np.repeat(np.arange(last - first), np.diff(store.offsets[first : last + 1]))
            out[first:last] = self._document_block(vectors, owner, last - first)
        return out

    def _document_block(self, vectors: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
        blocks = []
        for r in range(self.repetitions):
            bucket = self._bucket(vectors, r)
            projected = vectors @ self.sketch[r]
            sums = np.zeros((n * self.buckets, self.proj_dim), np.float32)
            counts = np.zeros(n * self.buckets, np.float32)
            np.add.at(sums, owner * self.buckets + bucket, projected)
            np.add.at(counts, owner * self.buckets + bucket, 1.0)
            empty = counts == 0
            if empty.any() and len(vectors):
                sums[empty] = projected[self._nearest_tokens(bucket, owner, n)][empty]
                counts[empty] = 1.0
            block = (sums / np.maximum(counts, 1.0)[:, None]).reshape(n, self.buckets * self.proj_dim)
            blocks.append(block)
        return np.concatenate(blocks, axis=1)

    def _nearest_tokens(self, bucket: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
        """For every (document, bucket): the document's token nearest in Hamming distance (row index)."""
        all_buckets = np.arange(self.buckets)
        xor = bucket[:, None] ^ all_buckets[None, :]
        distance = np.zeros(xor.shape, dtype=np.int64)
        for b in range(self.bits):
            distance += ((xor >> b) & 1).astype(np.int64)
        key = distance.astype(np.int64) * (len(bucket) + 1) + np.arange(len(bucket))[:, None]
        best = np.full((n, self.buckets), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(best, owner, key)
        rows = best % (len(bucket) + 1)
        rows[best == np.iinfo(np.int64).max] = 0
        return rows.ravel()


class MuveraIndex:
    """FDE candidates (exact dot product), then exact MaxSim of the best `rerank` on float16 tokens."""

    def __init__(
        self, repetitions: int = 10, bits: int = 4, proj_dim: int = 16, rerank: int = 256, seed: int = 0
    ):
        if rerank < 1:
            raise ValueError("rerank must be at least 1")
        self.options = {"repetitions": repetitions, "bits": bits, "proj_dim": proj_dim, "seed": seed}
        self.rerank = rerank
        self.encoder: FixedDimensionalEncoder | None = None
        self.fde = np.zeros((0, 0), np.float32)
        self.store = FlatTokens(np.zeros((0, 0), np.float16), np.zeros(1, np.int64))

    def __len__(self) -> int:
        return len(self.store)

    def build(self, documents: Sequence[Any] | FlatTokens) -> MuveraIndex:
        store = documents if isinstance(documents, FlatTokens) else FlatTokens.from_sets(documents)
        if len(store) == 0:
            raise ValueError("no documents to index")
        self.store = store
        self.encoder = FixedDimensionalEncoder(store.dim, **self.options)
        self.fde = self.encoder.documents(store)
        return self

    def memory_bytes(self) -> int:
        return int(self.fde.nbytes + self.store.vectors.nbytes + self.store.offsets.nbytes)

    def search(self, queries: Sequence[Any], k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Top k per query: (rows (q, k), scores (q, k)); rows of -1 where fewer than k were found."""
        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        rows = np.full((len(queries), k), -1, dtype=np.int64)
        scores = np.zeros((len(queries), k), dtype=np.float32)
        if self.encoder is None or not len(queries):
            return rows, scores
        qs = [as_token_matrix(q, "query").numpy() for q in queries]
        candidates, _ = top_k_exact(self.encoder.queries(qs), self.fde, self.rerank, score_function="dot")
        for i, q in enumerate(qs):
            exact = maxsim_rows(q, self.store.vectors, self.store.offsets, candidates[i])
            top = np.argsort(-exact, kind="stable")[:k]
            rows[i, : len(top)], scores[i, : len(top)] = candidates[i][top], exact[top]
        return rows, scores
