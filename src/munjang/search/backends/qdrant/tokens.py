"""ColBERT in a Qdrant collection: each passage's token matrix as the named multivector `colbert` of
its point (`MultiVectorConfig(comparator=MAX_SIM)`), pushed with the point, searched by Qdrant and
ranked exactly as a folder collection ranks.

The matrices come from the SQLite record's token cache (`token_vectors_after`: float16,
the same rows a folder collection's in-process index replays), sent as float32 (float16 values are
exact in it), in the same upsert as the point's dense vector, so the push's watermark covers them.
A passage with no token gets one zero token: its MaxSim is 0, as the in-process index scores it. The
HNSW graph is built only for a collection with `index="hnsw"`; otherwise Qdrant scores every point.

Qdrant's MaxSim rounds differently from the folder's float32 sums (local mode computes in float64),
and orders equal scores its own way. So Qdrant only proposes candidates, with their stored matrices,
scored again here by the folder's own code (`TokenIndex`, exact: ties by lower label), fetched until
no passage left out can reach the k-th score: a dot product of `dim` terms rounds by at most
about dim·u·|q|·|d| (then the sum over query tokens), and the push records the largest token norm
|d| it has stored (`token_norm`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...followers.dense import label_problems
from ...index.token_index import TokenIndex
from ..base import CollectionError, Filter, Queries, TopK

NAME = "colbert"
ROUNDING = 2.0**-23  # float32's unit roundoff, twice: Qdrant's sums and the exact ones both round


def tokens_key(config: Mapping[str, Any]) -> str:
    """The key the collection's token matrices are cached under in the store."""
    return f"multi_vector:{config['model']}"


def tokens_config(config: Mapping[str, Any], models: Any) -> dict[str, Any]:
    """The named multivector a new Qdrant collection needs for the collection's multi-vector model."""
    multi = config.get("multi_vector")
    if not multi:
        return {}
    graph = None if config.get("index") == "hnsw" else models.HnswConfigDiff(m=0)
    params = models.VectorParams(
        size=int(multi["dim"]),
        distance=models.Distance.DOT,
        multivector_config=models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM),
        hnsw_config=graph,
    )
    return {NAME: params}


def token_points(config: Mapping[str, Any], store: Any, labels: np.ndarray) -> tuple[dict[int, Any], float]:
    """({label: token matrix as lists} of one pushed batch, the largest token norm in it), read from
    the store's token cache."""
    multi = config.get("multi_vector")
    if not multi or not len(labels):
        return {}, 0.0
    dim = int(multi["dim"])
    found, matrices = next(
        store.token_vectors_after(tokens_key(multi), int(labels[0]) - 1, batch=len(labels)), (None, [])
    )
    if found is None or not np.array_equal(found, labels):
        raise CollectionError(f"{store.path}: no token vectors for labels {labels[:5].tolist()}…")
    out: dict[int, Any] = {}
    norm = 0.0
    for label, matrix in zip(labels.tolist(), matrices, strict=True):
        values = np.asarray(matrix, dtype=np.float32)
        if not len(values):
            values = np.zeros((1, dim), dtype=np.float32)
        norm = max(norm, float(np.linalg.norm(values, axis=1).max()))
        out[int(label)] = values.tolist()
    return out, norm


class QdrantTokens:
    """A collection's multi-vector retrieval answered by Qdrant, filtered by the compiled Qdrant
    filter (`native_filter`, `search_native`) or by allowed labels (`search`). `mean`: MeanMaxSim."""

    def __init__(self, points: Any, store: Any, dim: int, mean: bool = False) -> None:
        self.points, self.store, self.dim, self.mean = points, store, int(dim), mean

    def retrieve(self, store: Any, queries: Queries, k: int, filter: Filter | None) -> TopK:
        """The top-k per query matrix, filtered in Qdrant: by the filter compiled for it where that
        keeps its meaning, else by the labels it allows (nothing encoded when none is)."""
        if filter is None:
            return self.search(queries.encoded, k, None, self.mean)
        native = filter.native("qdrant", self.native_filter)
        if native is not None:
            return self.search_native(queries.encoded, k, native, self.mean)
        if len(filter.allowed) == 0:
            return queries.none()
        return self.search(queries.encoded, k, filter.allowed, self.mean)

    def native_filter(self, spec: Mapping[str, Any]) -> Any | None:
        self.points.sync(self.store)
        return self.points.native_filter(spec)

    def search_native(
        self, queries: Sequence[np.ndarray], k: int, native: Any, mean: bool = False
    ) -> list[list[tuple[int, float]]]:
        """`search` among the points matching the compiled Qdrant filter."""
        return self._search(queries, k, native, mean)

    def search(
        self, queries: Sequence[np.ndarray], k: int, allowed: np.ndarray | None = None, mean: bool = False
    ) -> list[list[tuple[int, float]]]:
        """The best `k` passages (label, MaxSim) per query matrix, among `allowed` labels when given;
        `mean` divides by the query's token count (MeanMaxSim). Best first, ties by lower label."""
        if allowed is None:
            return self._search(queries, k, None, mean)
        if not len(allowed):
            return [[] for _ in queries]
        models = self.points.models
        flt = models.Filter(must=[models.HasIdCondition(has_id=[int(x) for x in allowed])])
        return self._search(queries, k, flt, mean)

    def _search(
        self, queries: Sequence[np.ndarray], k: int, flt: Any, mean: bool
    ) -> list[list[tuple[int, float]]]:
        points = self.points
        points.sync(self.store)
        norm = float(points.state.get("token_norm") or 0.0)
        out: list[list[tuple[int, float]]] = []
        for query in queries:
            q = np.asarray(query, dtype=np.float32)
            if not len(q):
                out.append([])
                continue
            scale = 1.0 / len(q) if mean else 1.0
            terms = self.dim + len(q) + 2  # each dot product's terms, then the sum over query tokens
            margin = 2 * terms * ROUNDING * float(np.linalg.norm(q, axis=1).sum()) * max(norm, 1.0)
            limit = max(2 * k, k + 16)
            while True:
                found = points.client.query_points(
                    points.name, query=q.tolist(), using=NAME, limit=limit, query_filter=flt,
                    with_vectors=[NAME], with_payload=False,
                ).points  # fmt: skip
                ranked = self._rescore(q, found, k, mean)
                if len(found) < limit:
                    break
                last = float(found[-1].score)
                if len(ranked) == k and (last + margin) * scale < ranked[-1][1]:
                    break  # nothing left out can reach the k-th exact score, ties included
                limit *= 4
            out.append(ranked)
        return out

    def _rescore(
        self, query: np.ndarray, found: Sequence[Any], k: int, mean: bool
    ) -> list[tuple[int, float]]:
        """The candidates' exact top k, scored from their stored matrices by `TokenIndex`."""
        held = {int(p.id): (p.vector or {}).get(NAME) for p in found}
        matrices = {label: m for label, m in held.items() if m is not None}
        if not matrices:
            return []
        labels = sorted(matrices)
        index = TokenIndex(self.dim, exact_limit=len(labels))
        index.add(np.asarray(labels, dtype=np.int64), [np.asarray(matrices[x], np.float32) for x in labels])
        return index.search([query], k, None, mean)[0]

    def stored(self, store: Any, labels: Sequence[int]) -> list[np.ndarray | None]:
        """The `colbert` matrix of each label, float32 (None where none is held)."""
        self.points.sync(self.store)
        wanted = [int(x) for x in labels]
        found: dict[int, np.ndarray] = {}
        for start in range(0, len(wanted), 1000):
            for point in self.points.client.retrieve(
                self.points.name, ids=wanted[start : start + 1000], with_vectors=[NAME], with_payload=False
            ):
                matrix = (point.vector or {}).get(NAME)
                if matrix is not None:
                    found[int(point.id)] = np.asarray(matrix, dtype=np.float32)
        return [found.get(x) for x in wanted]

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        """Disagreement between Qdrant's points, caught up, and the stored passages (`labels`)."""
        self.points.sync(self.store)
        return label_problems("token vectors in Qdrant", self.points.ids(), labels)
