"""SPLADE in a Qdrant collection: each passage's sparse vector as the named sparse vector `splade` of
its point, pushed with the point, searched by Qdrant and ranked exactly as a folder collection ranks.

The vectors come from the SQLite record's sparse cache (`sparse_after`, the same rows a
folder collection's in-process index replays), summed per token in float32 as `rows_to_csr` sums
them, and go to Qdrant in the same upsert as the point's dense vector, so the push's watermark covers
them (a crash between points and watermark repeats an idempotent upsert). No IDF modifier: Qdrant
scores the plain dot product of the query's and the passage's weights.

Qdrant's own scores differ from the folder's float32 sums by rounding, and its order of equal scores
is its own. So Qdrant only proposes candidates, with their stored vectors, and they are scored again
here by the folder's own index code (`SparseIndex`: the same float32 steps, ties by lower label),
fetched until no passage left out can reach the k-th score. With non-negative weights (SPLADE's are:
log(1 + ReLU)) a rounding error is relative to the score, which bounds what an unfetched passage can
score; a query or a collection with a negative weight is fetched until Qdrant has no more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...followers.dense import label_problems
from ...index.sparse_index import SparseIndex, rows_to_csr
from ..base import CollectionError, Filter, Queries, TopK, sparse_cache_key
from .filters import retrieve_filtered

NAME = "splade"
ROUNDING = 2.0**-23  # float32's unit roundoff, twice: Qdrant's sums and the exact ones both round


def sparse_config(config: Mapping[str, Any], models: Any) -> dict[str, Any]:
    """The named sparse vector a new Qdrant collection needs for the collection's sparse model."""
    return {NAME: models.SparseVectorParams()} if config.get("sparse") else {}


def sparse_points(
    config: Mapping[str, Any], store: Any, labels: np.ndarray, models: Any
) -> tuple[dict[int, Any], bool]:
    """({label: SparseVector} of one pushed batch, whether any weight is negative), read from the
    store's sparse cache; a passage whose vector is empty gets none (it never matches)."""
    sparse = config.get("sparse")
    if not sparse or not len(labels):
        return {}, False
    key, dim = sparse_cache_key(str(sparse["model"])), int(sparse["dim"])
    found, rows = next(store.sparse_after(key, int(labels[0]) - 1, batch=len(labels)), (None, []))
    if found is None or not np.array_equal(found, labels):
        raise CollectionError(f"{store.path}: no sparse vectors for labels {labels[:5].tolist()}…")
    matrix = rows_to_csr(rows, dim)
    out: dict[int, Any] = {}
    for i, label in enumerate(labels.tolist()):
        start, end = matrix.indptr[i], matrix.indptr[i + 1]
        if end > start:
            indices, values = matrix.indices[start:end].tolist(), matrix.data[start:end].tolist()
            out[int(label)] = models.SparseVector(indices=indices, values=values)
    return out, bool((matrix.data < 0).any())


class QdrantSparse:
    """A collection's SPLADE retrieval answered by Qdrant: the metadata filter compiled for Qdrant
    (`native_filter`, `search_native`), or evaluated by the store (`search_where`) or given as
    allowed labels (`search`), applied inside Qdrant's query either way."""

    def __init__(self, points: Any, store: Any, dim: int) -> None:
        self.points, self.store, self.dim = points, store, int(dim)

    def retrieve(self, store: Any, queries: Queries, k: int, filter: Filter | None) -> TopK:
        """The top-k per query row, filtered in Qdrant: by the filter compiled for it where that
        keeps its meaning, else by the labels it allows (nothing encoded when none is)."""
        return retrieve_filtered(self, queries, k, filter)

    def native_filter(self, spec: Mapping[str, Any]) -> Any | None:
        self.points.sync(self.store)
        return self.points.native_filter(spec)

    def search_native(
        self, queries: Sequence[tuple[np.ndarray, np.ndarray]], k: int, native: Any
    ) -> list[list[tuple[int, float]]]:
        """`search` among the points matching the compiled Qdrant filter."""
        return self._search(queries, k, native)

    def search_where(
        self, queries: Sequence[tuple[np.ndarray, np.ndarray]], k: int, where: tuple[str, list[Any]] | None
    ) -> list[list[tuple[int, float]]]:
        """`search` among the passages the compiled SQL filter selects in the record store."""
        if where is None:
            return self.search(queries, k)
        return self.search(queries, k, self.store.labels_matching(*where))

    def search(
        self, queries: Sequence[tuple[np.ndarray, np.ndarray]], k: int, allowed: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        """The best `k` passages (label, dot product) per query vector (token ids, weights), among
        `allowed` labels when given: best first, ties by lower label, as the in-process index."""
        if allowed is None:
            return self._search(queries, k, None)
        if not len(allowed):
            return [[] for _ in queries]
        models = self.points.models
        flt = models.Filter(must=[models.HasIdCondition(has_id=[int(x) for x in allowed])])
        return self._search(queries, k, flt)

    def _search(
        self, queries: Sequence[tuple[np.ndarray, np.ndarray]], k: int, flt: Any
    ) -> list[list[tuple[int, float]]]:
        points = self.points
        points.sync(self.store)
        matrix = rows_to_csr(list(queries), self.dim)
        signed = bool(points.state.get("splade_signed"))
        out: list[list[tuple[int, float]]] = []
        for i in range(matrix.shape[0]):
            row = matrix[i]
            if not row.nnz:
                out.append([])
                continue
            query = points.models.SparseVector(indices=row.indices.tolist(), values=row.data.tolist())
            exact_bound = not signed and bool((row.data >= 0).all())
            slack = (row.nnz + 2) * ROUNDING
            limit = max(2 * k, k + 16)
            while True:
                found = points.client.query_points(
                    points.name, query=query, using=NAME, limit=limit, query_filter=flt, with_vectors=[NAME],
                    with_payload=False,
                ).points  # fmt: skip
                ranked = self._rescore(row, found, k)
                if len(found) < limit:
                    break
                last = float(found[-1].score)
                if exact_bound and len(ranked) == k and last * (1 + slack) < ranked[-1][1]:
                    break  # nothing left out can reach the k-th exact score, ties included
                limit *= 4
            out.append(ranked)
        return out

    def _rescore(self, row: Any, found: Sequence[Any], k: int) -> list[tuple[int, float]]:
        """The candidates' exact top k, scored from their stored vectors by `SparseIndex`."""
        held = {int(p.id): (p.vector or {}).get(NAME) for p in found}
        vectors = {label: v for label, v in held.items() if v is not None}
        labels = sorted(vectors)
        if not labels:
            return []
        index = SparseIndex(self.dim)
        rows = [
            (np.asarray(vectors[x].indices, np.int64), np.asarray(vectors[x].values, np.float32))
            for x in labels
        ]
        index.add(np.asarray(labels, dtype=np.int64), rows)
        return index.search(row, k)[0]

    def stored(self, store: Any, labels: Sequence[int]) -> list[dict[int, float]]:
        """The `splade` vector of each label as {token id: weight} (empty where none is held)."""
        self.points.sync(self.store)
        wanted = [int(x) for x in labels]
        found: dict[int, dict[int, float]] = {}
        for start in range(0, len(wanted), 1000):
            for point in self.points.client.retrieve(
                self.points.name, ids=wanted[start : start + 1000], with_vectors=[NAME], with_payload=False
            ):
                vector = (point.vector or {}).get(NAME)
                if vector is not None:
                    found[int(point.id)] = dict(zip(vector.indices, vector.values, strict=True))
        return [found.get(x, {}) for x in wanted]

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        """Disagreement between Qdrant's points, caught up, and the stored passages (`labels`)."""
        self.points.sync(self.store)
        return label_problems("sparse vectors in Qdrant", self.points.ids(), labels)
