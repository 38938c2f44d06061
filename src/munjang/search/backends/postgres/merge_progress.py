"""How far a background merge of HNSW segments has got, as PostgreSQL reports it, and a progress bar
with an estimate for whoever waits on it: a writer closing while a merge builds its graph
(`postgres_graph_merge.GraphMerger.close`) waits minutes at a million passages, and says how long.

PostgreSQL reports every index build in `pg_stat_progress_create_index`: its phase (a concurrent
build first waits for older transactions, then builds, then validates) and, while pgvector loads the
graph, the passages inserted so far. The passages the graph will hold are counted once per merge.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .connect import is_database_error
from .segments import Graph, graph_bounds

PROGRESS_SQL = "SELECT phase, tuples_done FROM pg_stat_progress_create_index WHERE pid = %s"


@dataclass(frozen=True)
class MergeProgress:
    """A merge under way: the graphs `graph` covers (segment numbers), the build's phase in
    PostgreSQL's words, and the passages in the new graph so far out of those it will hold."""

    graph: Graph
    phase: str
    done: int
    total: int

    @property
    def segments(self) -> str:
        """The segments merged, as "first-last"."""
        return f"{self.graph[0]}-{self.graph[0] + self.graph[1] - 1}"

    def describe(self) -> str:
        """One line: the segments, the share built and the phase."""
        share = f"{self.done / self.total:.0%} of " if self.total and self.done else ""
        return f"segments {self.segments}: {share}{self.total:,} passages ({self.phase})"


class MergeWatch:
    """Reads a merge's progress on a connection of its own (the merge's is busy building): the
    build of the merging backend `pid`, into a graph of `documents` over segments of `size`."""

    def __init__(self, conn: Any, pid: int, documents: str, size: int) -> None:
        self.conn, self.pid, self.documents, self.size = conn, pid, documents, size
        self._totals: dict[Graph, int] = {}

    def read(self, graph: Graph | None) -> MergeProgress | None:
        """The progress of `graph`'s build (None: no merge, or its build not yet reported)."""
        if graph is None:
            return None
        try:
            row = self.conn.execute(PROGRESS_SQL, (self.pid,)).fetchone()
            if row is None:
                return None
            if graph not in self._totals:
                low, high = graph_bounds(graph, self.size)
                sql = f"SELECT count(*) FROM {self.documents} WHERE label > %s AND label <= %s"
                self._totals[graph] = int(self.conn.execute(sql, (low, high)).fetchone()[0])
        except Exception as error:  # a progress read that fails shows nothing; the merge goes on
            if is_database_error(error):
                return None
            raise
        total = self._totals[graph]
        return MergeProgress(graph, str(row[0]), min(int(row[1] or 0), total), total)


def wait_showing_progress(
    thread: threading.Thread, progress: Callable[[], MergeProgress | None], every: float = 1.0
) -> None:
    """Join `thread`, showing each merge's `progress` (read every `every` seconds) as a bar with a
    rate and the time left, on a terminal; elsewhere the wait is silent (tqdm's own rule)."""
    from tqdm.auto import tqdm

    bar: Any = None
    shown: Graph | None = None
    try:
        while thread.is_alive():
            now = progress()
            if now is not None:
                if bar is None or now.graph != shown:
                    if bar is not None:
                        bar.close()
                    desc = f"merging HNSW segments {now.segments}"
                    bar = tqdm(total=now.total, initial=now.done, desc=desc, unit="passage", disable=None)
                    shown = now.graph
                bar.update(now.done - bar.n)
                bar.set_postfix_str(now.phase, refresh=True)
            thread.join(every)
    finally:
        if bar is not None:
            bar.close()
