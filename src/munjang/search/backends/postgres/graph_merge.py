"""Full HNSW segments of a PostgreSQL collection merged into larger graphs, in the background.

A search walks every graph of the collection (`postgres_segments.py`), and a walk costs about the
same whatever the graph's size: at 1,000,000 passages, eight segments of 131,072 cost a search
eight walks. Segments keep inserting cheap (a passage goes into a small graph), and a segment that is
full no longer changes but for deletions, so `FACTOR` full graphs of one size, aligned (the first's
number a multiple of `FACTOR` times their size), are merged into one graph over their labels, as
Lucene merges its segments: at 1M, one graph of 524,288 and the segments after it.

A merge never stops writers or readers. `CREATE INDEX CONCURRENTLY` builds the merged graph's
partial index while passages are added and searched; one transaction then records it in
`meta.hnsw_merged` in place of the graphs it covers; `DROP INDEX CONCURRENTLY` removes theirs once
no transaction that may have read the old layout still holds the table (a search takes the table's
share lock where it reads the layout, `postgres_segments.layout_sql`). Any step can be cut off (a
killed process, a cancelled build), and the next writer goes on from what it finds: an invalid index
(a build cut off) is dropped and built again, and indexes a recorded merge replaced are dropped.

One merge at a time per collection, across processes: a session advisory lock; a writer that finds
it held leaves the merging to its holder.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..base import CollectionError
from .connect import connect
from .merge_progress import MergeProgress, MergeWatch, wait_showing_progress
from .segments import (
    AHEAD,
    INDEX_PREFIX,
    MERGE_MEMORY_MB,
    OPCLASS,
    Graph,
    graph_bounds,
    graphs,
    held_segments,
    index_name,
    index_options,
    merge_memory_mb,
    merge_workers,
    read_merged,
    record_segments,
)

logger = logging.getLogger(__name__)

# Graphs of one size merged into one. Four keeps a search's walks few (at most three per size, and
# the newest segment) while each passage is rebuilt into a larger graph once per fourfold growth.
FACTOR = 4


def build_bytes(passages: int, dim: int, m: int) -> int:
    """The memory pgvector's build of a graph of `passages` takes: per passage its vector (4 bytes a
    dimension), its layer-0 neighbours (2m of 16 bytes) and the element (~256 bytes with its upper
    layers), and half as much again for the allocator's rounding in a build without parallel workers."""
    return passages * (4 * dim + 32 * m + 256) * 3 // 2


def build_memory_mb(passages: int, dim: int, m: int, cap: int = MERGE_MEMORY_MB) -> int:
    """`maintenance_work_mem` (MB) for a merge's build in memory: `build_bytes`, at least 64
    (PostgreSQL's default), at most `cap` (the collection's `merge_memory_mb`), which wins."""
    return min(cap, max(64, -(-build_bytes(passages, dim, m) // 2**20)))


def next_merge(layout: Sequence[Graph], last_label: int, size: int, factor: int = FACTOR) -> Graph | None:
    """The first `factor` graphs of `layout` of one size, aligned and all full (every label in them
    given out, `last_label` past their end), as the one graph they merge into; None if there are none."""
    for i in range(len(layout) - factor + 1):
        group = layout[i : i + factor]
        first, count = group[0]
        merged = (first, count * factor)
        if (
            all(n == count for _, n in group)
            and first % merged[1] == 0
            and last_label >= graph_bounds(merged, size)[1]
        ):
            return merged
    return None


def replaced(indexes: Sequence[str], layout: Sequence[Graph]) -> list[str]:
    """The graph indexes among `indexes` (names) that a merged graph of `layout` covers but that are
    not in it: those a recorded merge replaced, or a build of a merge since done another way."""
    names = {index_name(graph): graph for graph in layout}
    covered = [(first, first + count) for first, count in layout if count > 1]
    gone = []
    for name in indexes:
        graph = parse_name(name)
        if graph is None or name in names:
            continue
        first, count = graph
        if any(low <= first and first + count <= high for low, high in covered):
            gone.append(name)
    return gone


def parse_name(name: str) -> Graph | None:
    """The graph an index name stands for (`index_name`), or None for any other name."""
    if not name.startswith(INDEX_PREFIX + "_"):
        return None
    parts = name[len(INDEX_PREFIX) + 1 :].split("_")
    if not all(part.isdigit() for part in parts) or len(parts) > 2:
        return None
    return (int(parts[0]), int(parts[1]) if len(parts) == 2 else 1)


class GraphMerger:
    """Runs a collection's due merges, one after another, on a thread and a connection of its own:
    `poke` after each commit that added passages; `close` waits for the merge under way, showing
    its progress. `workers`: the parallel workers each build may take (None: the collection's
    `merge_workers` setting)."""

    def __init__(
        self,
        url: str,
        schema: str,
        table: Callable[[str], str],
        factor: int = FACTOR,
        workers: int | None = None,
    ) -> None:
        self.url, self.schema, self.table, self.factor, self.workers = url, schema, table, factor, workers
        self._thread: threading.Thread | None = None
        self._conn: Any = None
        self._lock = threading.Lock()
        self._stopped = False  # cancelled: no merge after the one under way
        self._again = False  # poked since the thread last looked for merges
        self._running = False  # a thread looks for merges (decided under `_lock`)
        self.merging: Graph | None = None  # the graph whose index is being built
        self._pid: int | None = None  # the merge connection's backend (whose build PostgreSQL reports)
        self._size = 0  # labels per segment of the collection being merged
        self.error: BaseException | None = None  # the last merge's failure (tried again at the next poke)

    def poke(self) -> None:
        """Start merging unless a merge is under way in this process."""
        with self._lock:
            self._again = True  # a thread under way looks again before it stops
            if self._running:
                return
            self._running, self._stopped = True, False
            self._thread = threading.Thread(target=self._run, name=f"merge {self.schema}", daemon=True)
            self._thread.start()

    def close(self, cancel: bool = False) -> None:
        """Wait for the merge under way, or `cancel` it (as when interrupted, Ctrl-C): a cancelled
        merge is taken up again by the next writer."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        try:
            if cancel:
                self._cancel()
            elif self.merging is not None:
                self._wait_showing_progress(thread)
            thread.join()
        except BaseException:
            self._cancel()
            thread.join()
            raise

    def progress(self, conn: Any) -> MergeProgress | None:
        """How far the merge under way in this process has got, read on `conn` (not the merge's
        own); None when none is under way or its build is not yet under way."""
        pid = self._pid
        if pid is None:
            return None
        return MergeWatch(conn, pid, self.table("documents"), self._size).read(self.merging)

    def _wait_showing_progress(self, thread: threading.Thread) -> None:
        """Wait for `thread`, saying what it finishes (a warning, shown where nothing configured
        logging: the CLI) and showing its progress on a terminal."""
        message = "%s: closing waits for a merge of HNSW %s; Ctrl-C leaves it to the next writer"
        pid = self._pid
        try:
            conn = None if pid is None else connect(self.url)
        except CollectionError:  # the progress is a courtesy: without it, the wait is the same
            conn = None
        if conn is None or pid is None:
            logger.warning(message, self.schema, "segments")
            return
        with conn:
            watch = MergeWatch(conn, pid, self.table("documents"), self._size)
            now = watch.read(self.merging)
            logger.warning(message, self.schema, now.describe() if now is not None else "segments")
            wait_showing_progress(thread, lambda: watch.read(self.merging))

    def _cancel(self) -> None:
        self._stopped = True
        conn = self._conn
        if conn is not None:
            conn.cancel()

    def _run(self) -> None:
        try:
            self._conn = connect(self.url)
            self._pid = int(self._conn.info.backend_pid)
            with self._conn:
                self._conn.execute(
                    "SELECT set_config('application_name', %s, false)", [f"munjang merge {self.schema}"]
                )
                while self._look_again():
                    self.merge_all(self._conn)
            self.error = None
        except Exception as error:  # the collection is whole: the next poke goes on from here
            self.error = error
            logger.warning("%s: merging HNSW segments stopped: %s", self.schema, error)
        finally:
            self._conn, self._pid = None, None
            with self._lock:
                if self._thread is threading.current_thread():  # not a thread poked since
                    self._running = False

    def _look_again(self) -> bool:
        """Whether the thread looks for merges once more (poked since it last looked), or stops."""
        with self._lock:
            again, self._again = self._again and not self._stopped, False
            self._running = again
            return again

    def merge_all(self, conn: Any) -> int:
        """On `conn` (autocommit): every due merge, under the collection's merge lock; the merges done
        (0 when another process holds the lock)."""
        key = f"munjang-merge:{self.schema}"
        if not conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,)).fetchone()[0]:
            return 0
        done = 0
        try:
            while True:
                layout, last_label, size = self.layout(conn)
                for name in replaced(list(self.indexes(conn)), layout):
                    conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{self.schema}".{name}')
                graph = next_merge(layout, last_label, size, self.factor)
                if graph is None and not self._stopped:
                    self.fill(conn, layout, last_label, size)
                if graph is None or self._stopped:
                    return done
                self.merge(conn, graph, size)
                done += 1
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))

    def layout(self, conn: Any) -> tuple[list[Graph], int, int]:
        """The collection's graphs, last label and segment size, as committed."""
        meta = self.table("meta")
        keys = "('hnsw_merged', 'hnsw_segment_size')"
        rows = dict(conn.execute(f"SELECT key, value FROM {meta} WHERE key IN {keys}").fetchall())
        last_label = conn.execute(f"SELECT last_label FROM {self.table('state')}").fetchone()[0]
        size = int(json.loads(rows["hnsw_segment_size"]))
        return (
            graphs(read_merged(rows.get("hnsw_merged")), held_segments(last_label, size)),
            int(last_label),
            size,
        )

    def indexes(self, conn: Any) -> dict[str, bool]:
        """The collection's graph indexes by name, each with whether it is valid (a concurrent build
        cut off leaves an invalid one)."""
        rows = conn.execute(
            "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname LIKE %s",
            (self.schema, INDEX_PREFIX.replace("_", "\\_") + "\\_%"),
        ).fetchall()
        return {name: bool(valid) for name, valid in rows}

    def merge(self, conn: Any, graph: Graph, size: int) -> None:
        """Build `graph`'s index (again, if a build was cut off), then record it in place of the
        graphs it covers; their indexes are dropped by the next `merge_all` round."""
        logger.info("%s: merging HNSW segments %d-%d", self.schema, graph[0], graph[0] + graph[1] - 1)
        self._size, self.merging = size, graph
        try:
            self.build(conn, graph, size)
        finally:
            self.merging = None
        first, count = graph
        with conn.transaction():
            meta = self.table("meta")
            found = conn.execute(f"SELECT value FROM {meta} WHERE key = 'hnsw_merged' FOR UPDATE").fetchone()
            kept = [g for g in read_merged(found[0] if found else None) if not first <= g[0] < first + count]
            conn.execute(
                f"INSERT INTO {meta} (key, value) VALUES ('hnsw_merged', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (json.dumps(sorted([*kept, graph])),),
            )

    def fill(self, conn: Any, layout: Sequence[Graph], last_label: int, size: int) -> None:
        """Build the index of every segment after the merged graphs, up to `AHEAD` past the last
        label, that is missing or invalid: those the writer left to its next commit while a merge
        held the table (`postgres_segments.add_segments`), and record how many segments exist."""
        start = sum(count for _, count in layout if count > 1)  # merged graphs cover the first labels
        need = held_segments(last_label, size) + AHEAD
        for number in range(start, need):
            self.build(conn, (number, 1), size)
        record_segments(conn, self.table("meta"), need)

    def build(self, conn: Any, graph: Graph, size: int) -> None:
        """Make `graph`'s partial index without stopping writers or readers, unless a valid one exists
        (an invalid one, a build cut off, is dropped first)."""
        name, index = index_name(graph), f'"{self.schema}".{index_name(graph)}'
        valid = self.indexes(conn).get(name)
        if valid:
            return
        if valid is False:
            conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {index}")
        sql = f"SELECT key, value FROM {self.table('meta')} WHERE key IN ('metric', 'hnsw', 'dim')"
        rows = dict(conn.execute(sql).fetchall())
        hnsw = json.loads(rows.get("hnsw", "null")) or {}
        dim, m = int(json.loads(rows["dim"])), int(hnsw.get("connectivity", 16))
        memory = build_memory_mb(graph[1] * size, dim, m, merge_memory_mb(hnsw))
        workers = merge_workers(hnsw) if self.workers is None else self.workers
        conn.execute(f"SET maintenance_work_mem = '{memory}MB'")
        conn.execute(f"SET max_parallel_maintenance_workers = {int(workers)}")
        options = index_options(hnsw)
        low, high = graph_bounds(graph, size)
        conn.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {self.table('documents')} USING hnsw "
            f"(embedding {OPCLASS[json.loads(rows['metric'])]}) {options} "
            f"WHERE label > {low} AND label <= {high}"
        )
