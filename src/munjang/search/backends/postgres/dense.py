"""Dense search inside PostgreSQL: pgvector's HNSW indexes (one per range of labels,
`postgres_segments.py`) or an exact scan over the documents table.

pgvector filters after the graph walk: a `WHERE` clause drops rows from the `ef_search` candidates
the index returns, so a selective filter can leave fewer than k. Each query that comes back short of
min(k, matching documents) is run again exactly (ordered by an expression the index cannot serve,
so PostgreSQL scans and sorts), the same rule the embedded HNSW collection follows. Scores are
larger-is-better, as everywhere in munjang: cosine similarity (1 - `<=>`) or the dot product (- `<#>`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...followers.dense import label_problems
from ..base import Filter, Queries, TopK, Watermark, ranked_rows
from .segments import (
    INDEX_PREFIX,
    Graph,
    ask_again,
    best_of,
    first_asks,
    graphs,
    held_segments,
    layout_sql,
    read_merged,
    search_sql,
)
from .store import PostgresStore

OPERATOR = {"cosine": "<=>", "dot": "<#>"}
MAX_EF_SEARCH = 1000  # pgvector's upper bound for hnsw.ef_search
EF_SQL = "SELECT set_config('hnsw.ef_search', %s, true)"  # for the transaction
# The same, and no sorting for the rest of the transaction, so an unfiltered search walks every graph:
# the planner chooses between a graph and a sort of its range by statistics that PostgreSQL refreshes
# only after a tenth of the table changed, and it sorted a newest segment of tens of thousands of
# passages it had counted at a few hundred (docs/benchmarks.md). A filter keeps the planner's choice:
# a selective one is rightly served by its own index and a sort.
WALK_SQL = "SELECT set_config('hnsw.ef_search', %s, true), set_config('enable_sort', 'off', true)"


class PostgresDense:
    """The collection's vector index when it lives in PostgreSQL: nothing to load, sync or save;
    filters are the compiled SQL condition, applied in the same query."""

    persistent = False

    def __init__(self, store: PostgresStore, config: dict[str, Any]) -> None:
        self.store = store
        self.config = config
        self.kind = config["index"]
        self.metric = config["metric"]
        self.ef_search = int((config.get("hnsw") or {}).get("expansion_search", 64))
        # Labels per HNSW segment; None: one graph over everything (a collection made before segments).
        size = config.get("hnsw_segment_size")
        self.segment_size = None if size is None else int(size)
        self.index = self
        self.watermark = self.saved = Watermark()
        self._twin: PostgresDense | None = None
        self._twin_lock = threading.Lock()

    def apart(self) -> PostgresDense | None:
        """This index searching on the store's second connection (`PostgresStore.beside`), for a
        hybrid search to run on another thread while BM25 runs on the first; None inside a write
        transaction, whose uncommitted rows only the first connection sees."""
        if self.store.in_transaction:
            return None
        with self._twin_lock:
            if self._twin is None:
                self._twin = PostgresDense(self.store.beside(), self.config)
            return self._twin

    def sync(self, store: Any) -> bool:
        return False

    def tail_due(self) -> bool:
        return False  # nothing kept outside the database

    def retrieve(self, store: Any, queries: Queries, k: int, filter: Filter | None) -> TopK:
        """`search` with the filter compiled to SQL, in the same query (nothing encoded when no
        document is stored)."""
        if not self:
            return queries.none()
        return ranked_rows(
            *self.search(store, queries.encoded, k, None, None if filter is None else filter.where)
        )

    def stored(self, store: Any, labels: Sequence[int]) -> list[Any]:
        wanted = np.asarray(labels, dtype=np.int64)
        return list(self.store.vectors_of(self.config["model"], int(self.config["dim"]), wanted))

    def problems(self, store: Any, labels: np.ndarray) -> list[str]:
        return label_problems("dense index", self.ids(), labels)

    def __len__(self) -> int:
        return self.store.passage_count()

    def __bool__(self) -> bool:
        """Whether any document is stored, without counting them all (searches ask this first)."""
        return self.store.has_documents()

    def ids(self) -> np.ndarray:
        return self.store.labels_matching("TRUE", [])

    def memory_bytes(self) -> int:
        """Size of the HNSW index relations (they are PostgreSQL's to cache, not this process's)."""
        row = self.store.conn.execute(
            "SELECT coalesce(sum(pg_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND (c.relname = %s OR c.relname LIKE %s)",
            (self.store.schema, INDEX_PREFIX, INDEX_PREFIX.replace("_", "\\_") + "\\_%"),
        ).fetchone()
        return int(row[0])

    def search(
        self,
        store: Any,
        vectors: np.ndarray,
        k: int,
        allowed: np.ndarray | None,
        where: tuple[str, list[Any]] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (labels, scores) per query vector among documents matching `where` (SQL, params)."""
        condition, params = where if where is not None else ("TRUE", [])
        labels = np.full((len(vectors), k), -1, dtype=np.int64)
        scores = np.full((len(vectors), k), -np.inf, dtype=np.float32)
        matching: int | None = None
        for i, vector in enumerate(np.asarray(vectors, dtype=np.float32)):
            exact = self.kind == "exact" or k > MAX_EF_SEARCH
            rows = self._query(vector, k, condition, params, exact)
            if not exact and len(rows) < k:
                if matching is None:
                    matching = self.store.count_matching(condition, params)
                if len(rows) < min(k, matching):
                    rows = self._query(vector, k, condition, params, exact=True)
            for j, (label, distance) in enumerate(rows):
                labels[i, j] = label
                scores[i, j] = 1.0 - distance if self.metric == "cosine" else -distance
        return labels, scores

    def _query(
        self, vector: np.ndarray, k: int, condition: str, params: list[Any], exact: bool
    ) -> list[tuple[int, float]]:
        op = OPERATOR[self.metric]
        documents = self.store.t("documents")
        conn = self.store.conn
        # One snapshot: the segment count and the segments' rows agree (`postgres_segments.py`).
        with self.store.snapshot():
            if not exact and self.segment_size is not None:
                size = self.segment_size
                meta, state = self.store.t("meta"), self.store.t("state")
                merged, last_label, _ = conn.execute(layout_sql(meta, state, documents)).fetchone()
                layout = graphs(read_merged(merged), held_segments(last_label, size))
                if not layout:
                    return []
                # Unfiltered, each graph is first asked for its share of k; a filter can leave a
                # graph short of any share, so filtered searches ask every graph for all k.
                if condition == "TRUE":
                    asks = first_asks(k, layout, int(last_label), size)
                else:
                    asks = [k] * len(layout)
                return self._segmented(vector, k, layout, asks, condition, params, size)
            if not exact:
                conn.execute(EF_SQL, [str(min(max(self.ef_search, k), MAX_EF_SEARCH))])
            # One graph over everything, or exact: ordering by an expression the index cannot serve
            # ("+ 0") makes PostgreSQL scan and sort, whatever the planner settings or a cached plan say.
            order = f"(embedding {op} %s) + 0" if exact else f"embedding {op} %s"
            sql = (
                f"SELECT label, embedding {op} %s FROM {documents} "
                f"WHERE {condition} ORDER BY {order} LIMIT %s"
            )
            rows = conn.execute(sql, [vector, *params, vector, k]).fetchall()
        return [(int(label), float(distance)) for label, distance in rows]

    def _segmented(
        self,
        vector: np.ndarray,
        k: int,
        layout: list[Graph],
        asks: list[int],
        condition: str,
        params: list[Any],
        size: int,
    ) -> list[tuple[int, float]]:
        """Inside the search's snapshot: each graph of `layout`'s best `asks[n]`, merged (the graphs
        walked at one `ef_search` share one statement); then the graphs that may hold more of the
        best k (`ask_again`) asked again for all k, at an `ef_search` of at least k."""
        op, documents, conn = OPERATOR[self.metric], self.store.t("documents"), self.store.conn
        walks: dict[int, list[int]] = {}
        for number, ask in enumerate(asks):
            walks.setdefault(min(max(self.ef_search, ask), MAX_EF_SEARCH), []).append(number)
        rows: list[tuple[int, int, float]] = []
        setting = WALK_SQL if condition == "TRUE" else EF_SQL
        for ef, numbers in sorted(walks.items()):
            conn.execute(setting, [str(ef)])
            sql = search_sql(documents, op, condition, layout, numbers, size)
            values = [x for n in numbers for x in (vector, *params, vector, asks[n])]
            rows += conn.execute(sql, values).fetchall()
        best = best_of(rows, k)
        again = ask_again(rows, best, k, asks)
        if again:
            conn.execute(setting, [str(min(max(self.ef_search, k), MAX_EF_SEARCH))])
            sql = search_sql(documents, op, condition, layout, again, size)
            kept = [row for row in rows if row[0] not in again]
            best = best_of(kept + conn.execute(sql, [vector, *params, vector, k] * len(again)).fetchall(), k)
        return best
