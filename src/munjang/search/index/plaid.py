"""PlaidIndex: multi-vector search beyond brute force, in the spirit of PLAID (Santhanam et al., 2022).

Build: spherical k-means over (a sample of) the documents' token vectors; every token is stored as
its nearest centroid's id plus its residual (token - centroid) quantized to int8 per dimension
(one scale per dimension); an inverted list maps each centroid to the documents holding a token there.

Search for a query (tokens, dim):

1. candidates: the documents in the inverted lists of each query token's `nprobe` nearest centroids;
2. centroid interaction: each candidate scored by MaxSim against its tokens' centroids only
   (a lookup in the query-by-centroid score table), keeping the best `rerank`;
3. exact MaxSim of those against their decompressed tokens (centroid + residual), top k.

Memory per document: tokens x (dim bytes of residual + 4 bytes of centroid id), plus the inverted
lists (8 bytes per distinct (centroid, document) pair) and the centroids (float32, shared).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ...encoders.multi_vector.flat import FlatTokens, maxsim_rows, segment_max, token_rows
from ...encoders.multi_vector.maxsim import as_token_matrix


def spherical_kmeans(
    vectors: np.ndarray, k: int, iterations: int = 8, seed: int = 0, chunk: int = 65536
) -> np.ndarray:
    """k unit centroids of unit vectors (cosine k-means), initialised from a random sample."""
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(np.ascontiguousarray(vectors, dtype=np.float32))
    k = min(k, len(x))
    centroids = x[torch.from_numpy(rng.choice(len(x), size=k, replace=False))].clone()
    for _ in range(iterations):
        sums = torch.zeros_like(centroids)
        counts = torch.zeros(k)
        for start in range(0, len(x), chunk):
            part = x[start : start + chunk]
            assign = (part @ centroids.T).argmax(dim=1)
            sums.index_add_(0, assign, part)
            counts.index_add_(0, assign, torch.ones(len(part)))
        empty = counts == 0
        if empty.any():  # re-seed empty clusters with random points
            sums[empty] = x[torch.from_numpy(rng.choice(len(x), size=int(empty.sum())))]
        centroids = torch.nn.functional.normalize(sums, dim=1)
    return centroids.numpy()


def nearest_centroid(vectors: np.ndarray, centroids: np.ndarray, chunk: int = 65536) -> np.ndarray:
    c = torch.from_numpy(centroids)
    out = np.empty(len(vectors), dtype=np.int32)
    for start in range(0, len(vectors), chunk):
        part = torch.from_numpy(np.asarray(vectors[start : start + chunk], dtype=np.float32))
        out[start : start + len(part)] = (part @ c.T).argmax(dim=1).numpy()
    return out


class PlaidIndex:
    """Centroid candidates, centroid-interaction pruning, exact MaxSim on int8-residual tokens."""

    def __init__(
        self, n_centroids: int | None = None, nprobe: int = 4, rerank: int = 256, seed: int = 0
    ) -> None:
        if nprobe < 1 or rerank < 1:
            raise ValueError("nprobe and rerank must be at least 1")
        self.n_centroids, self.nprobe, self.rerank, self.seed = n_centroids, nprobe, rerank, seed
        self.centroids = np.zeros((0, 0), np.float32)
        self.codes = np.zeros(0, np.int32)
        self.residuals = np.zeros((0, 0), np.int8)
        self.scales = np.ones(0, np.float32)
        self.offsets = np.zeros(1, np.int64)
        self.list_offsets = np.zeros(1, np.int64)
        self.list_docs = np.zeros(0, np.int32)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def build(self, documents: Sequence[Any] | FlatTokens, sample: int = 262_144) -> PlaidIndex:
        """Index the documents' token sets (unit vectors), replacing what the index held."""
        store = documents if isinstance(documents, FlatTokens) else FlatTokens.from_sets(documents)
        if len(store) == 0:
            raise ValueError("no documents to index")
        vectors = store.vectors
        n_tokens = len(vectors)
        # PLAID's rule of thumb: about 16 * sqrt(tokens) centroids, as a power of two (at most 2^13 on CPU).
        k = self.n_centroids or int(2 ** min(13, np.floor(np.log2(max(16 * np.sqrt(n_tokens), 2)))))
        rng = np.random.default_rng(self.seed)
        picked = rng.choice(n_tokens, size=min(sample, n_tokens), replace=False)
        self.centroids = spherical_kmeans(vectors[np.sort(picked)], k, seed=self.seed)
        self.codes = nearest_centroid(vectors, self.centroids)
        self.scales = np.full(store.dim, 1e-8, np.float32)
        for start in range(0, n_tokens, 262_144):  # the residual's range per dimension, chunk by chunk
            part = (
                vectors[start : start + 262_144].astype(np.float32)
                - self.centroids[self.codes[start : start + 262_144]]
            )
            self.scales = np.maximum(self.scales, np.abs(part).max(axis=0))
        self.scales /= 127.0
        self.residuals = np.empty(vectors.shape, np.int8)
        for start in range(0, n_tokens, 262_144):
            part = (
                vectors[start : start + 262_144].astype(np.float32)
                - self.centroids[self.codes[start : start + 262_144]]
            )
            self.residuals[start : start + 262_144] = np.clip(np.rint(part / self.scales), -127, 127)
        self.offsets = store.offsets.copy()
        pairs = np.unique(self.codes.astype(np.int64) * len(store) + store.doc_of_token)
        list_of = pairs // len(store)
        self.list_docs = (pairs % len(store)).astype(np.int32)
        self.list_offsets = np.concatenate(
            [[0], np.cumsum(np.bincount(list_of, minlength=len(self.centroids)))]
        )
        return self

    def memory_bytes(self) -> int:
        arrays = (self.centroids, self.codes, self.residuals, self.scales, self.offsets)
        return int(sum(a.nbytes for a in arrays) + self.list_offsets.nbytes + self.list_docs.nbytes)

    def decompressed(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(token vectors, offsets) of the chosen documents, rebuilt from centroid + residual."""
        rows, lengths = token_rows(self.offsets, docs)
        vectors = self.centroids[self.codes[rows]] + self.residuals[rows].astype(np.float32) * self.scales
        local = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return vectors, local

    def search_one(self, query: Any, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """(document rows, MaxSim scores) of the top k for one query token matrix."""
        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        if len(self) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        q = as_token_matrix(query, "query").numpy()
        table = q @ self.centroids.T  # (query tokens, centroids)
        nprobe = min(self.nprobe, table.shape[1])
        probes = np.unique(np.argpartition(-table, nprobe - 1, axis=1)[:, :nprobe])
        lists = [self.list_docs[self.list_offsets[c] : self.list_offsets[c + 1]] for c in probes]
        candidates = np.unique(np.concatenate(lists)).astype(np.int64)
        if len(candidates) > self.rerank:
            approx = self._centroid_scores(table, candidates)
            keep = np.argpartition(-approx, self.rerank - 1)[: self.rerank]
            candidates = candidates[keep]
        vectors, local = self.decompressed(candidates)
        scores = maxsim_rows(q, vectors, local, np.arange(len(candidates)))
        top = np.argsort(-scores, kind="stable")[:k]
        return candidates[top], scores[top]

    def _centroid_scores(self, table: np.ndarray, docs: np.ndarray) -> np.ndarray:
        """MaxSim of the query against each document's token centroids (PLAID's pruning stage)."""
        rows, lengths = token_rows(self.offsets, docs)
        sims = table[:, self.codes[rows]]  # (query tokens, candidate tokens)
        best = np.full((table.shape[0], len(docs)), -np.inf, dtype=np.float32)
        segment_max(sims, lengths, best)
        best[~np.isfinite(best)] = 0.0
        return best.sum(axis=0)

    def search(self, queries: Sequence[Any], k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Top k per query: (rows (q, k), scores (q, k)); rows of -1 where fewer than k were found."""
        rows = np.full((len(queries), k), -1, dtype=np.int64)
        scores = np.zeros((len(queries), k), dtype=np.float32)
        for i, q in enumerate(queries):
            found, values = self.search_one(q, k)
            rows[i, : len(found)], scores[i, : len(found)] = found, values
        return rows, scores
