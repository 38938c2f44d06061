"""An HNSW graph mapped read-only from its file, plus what was changed since, without editing it.

A reader of a collection maps the writer's last saved graph (`SegmentedGraph.load(view=True)`). Passages
added after that save go to an in-memory `ExactIndex` (the tail: the writer saves a new graph once
the changes reach a tenth of the collection, so the tail stays a bounded share of it); labels removed
since are masked and the graph is asked for that many more hits. So a reader answers without reading
the graph into memory or inserting into it, however far the writer is past its last save.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .exact import ExactIndex, merge_hits
from .mapped_exact import MappedExactIndex
from .segmented_graph import SegmentedGraph


class ViewedGraph:
    """The add / remove / search / ids contract of `HNSWIndex`, over read-only graphs and a tail."""

    def __init__(self, graph: SegmentedGraph, tail: ExactIndex | MappedExactIndex | None = None) -> None:
        """`tail`: what was added since the graph's save, when a saved tail holds it."""
        self.graph = graph
        self.dim, self.metric = graph.dim, graph.metric
        self.tail = tail if tail is not None else ExactIndex(graph.dim, graph.metric)
        self._dead = np.zeros(0, dtype=np.int64)  # graph labels removed since the save, ascending

    @property
    def dead(self) -> int:
        """How many of the graph's labels are masked."""
        return len(self._dead)

    def __len__(self) -> int:
        return len(self.graph) - len(self._dead) + len(self.tail)

    def __contains__(self, label: object) -> bool:
        if label in self.tail:
            return True
        return label in self.graph and not np.isin(np.int64(label), self._dead)  # type: ignore[arg-type]

    def _in_graph(self, labels: np.ndarray) -> np.ndarray:
        """The labels among these that are live in the graph."""
        live = labels[self.graph.contains(labels)]
        return live[~np.isin(live, self._dead)]

    def add(self, ids: Any, vectors: Any) -> None:
        """Labelled vectors into the tail; a label the graph holds is masked there (replaced)."""
        labels = np.asarray(ids, dtype=np.int64).reshape(-1)
        self._mask(labels)
        self.tail.add(labels, vectors)

    def remove(self, ids: Any) -> int:
        """Remove labels (absent ones are ignored); returns how many were removed."""
        labels = np.unique(np.asarray(ids, dtype=np.int64).reshape(-1))
        return self._mask(labels) + self.tail.remove(labels)

    def _mask(self, labels: np.ndarray) -> int:
        found = np.unique(self._in_graph(labels))
        if len(found):
            self._dead = np.union1d(self._dead, found)
        return len(found)

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(labels (q, k) int64 padded with -1, scores (q, k) float32), best first, equal scores
        lower label first: the graph's hits less the masked labels, merged with the tail's."""
        query = np.asarray(queries, dtype=np.float32)
        query = query.reshape(1, -1) if query.ndim == 1 else query
        graph_labels, graph_scores = self.graph.search(query, k + len(self._dead))
        if len(self._dead):
            masked = np.isin(graph_labels, self._dead)
            graph_labels = np.where(masked, -1, graph_labels)
            graph_scores = np.where(masked, -np.inf, graph_scores).astype(np.float32)
        return merge_hits([(graph_labels, graph_scores), self.tail.search(query, k)], k)

    def ids(self) -> np.ndarray:
        """The labels held, ascending."""
        return np.union1d(np.setdiff1d(self.graph.ids(), self._dead), self.tail.ids())

    def get_vectors(self, ids: Any) -> np.ndarray:
        """The held vectors of `ids` (float32 (n, dim)); ValueError if one is absent."""
        labels = np.asarray(ids, dtype=np.int64).reshape(-1)
        out = np.zeros((len(labels), self.dim), dtype=np.float32)
        for row, label in enumerate(labels.tolist()):
            if label in self.tail:
                out[row] = self.tail.vectors()[np.searchsorted(self.tail.ids(), label)]
            elif label in self:
                out[row] = self.graph.get_vectors([label])[0]
            else:
                raise ValueError(f"id {label} is not in the index")
        return out

    def memory_bytes(self) -> int:
        """Bytes held in memory: the graph's bookkeeping (its file is mapped), the tail and the mask."""
        return int(self.graph.memory_bytes() + self.tail.memory_bytes() + self._dead.nbytes)
