"""pgvector's HNSW kept as several graphs of bounded size: partial indexes over ranges of labels.

Inserting into one pgvector graph costs more as it grows (bench/collection_scale.py measured the
database's CPU per passage near doubling from the first 100,000 passages to the third), the cause the
folder backend's graphs had before their segments (`index/segmented_graph.py`). Here segment n is
the partial index `documents_embedding_hnsw_<n>` over labels in (n * size, (n + 1) * size]. Labels
only grow (bigserial, never reused), so inserts go to the newest segment and an older graph no
longer changes but for deletions.

The writer makes segments' indexes ahead of the labels (`AHEAD` past the one holding the last
label), in its write transaction, and records how many exist (`meta.hnsw_segments`). A search counts
the segments holding labels from the last label it reads, in one statement with the merged graphs
(`layout_sql`), then asks every graph: a `UNION ALL` of per-range `ORDER BY embedding <op> q LIMIT n`.
All statements read one snapshot (a repeatable-read transaction), so a segment committed between them
is not missed. The range bounds are written into the SQL as literals, because a generic plan with
parameters cannot prove a partial index's predicate. Making indexes ahead keeps the writer from
needing one while a merge builds its graph (`CREATE INDEX CONCURRENTLY` holds a lock that any other
index build waits for): it tries for a moment (`LOCK_WAIT`) and, failing, leaves the index to its next
commit. A segment whose index is missing is still searched, by a scan of its range.

Each segment is first asked for its share of k, not all of k (`first_asks`): a walk's cost grows
with `ef_search`, and a hybrid search over documents asks for 400 passages (100 candidates, 4 passages
each), so asking each of 8 graphs for 400 made the dense side of a search at 1M cost 8 walks at
`ef_search` 400. The share is Lucene's "optimistic" per-segment k (k times the segment's part of
the labels, plus standard deviations of the binomial; the newest segment is partly filled, so the
others' parts are larger than 1 / segments), and so is the check that follows (`ask_again`): a
segment whose last hit still ranks within the merged best k (`best_of`) may hold more of them, and
is asked again for all k in the same snapshot.

Full segments are merged, four at a time, into one graph over their labels
(`postgres_graph_merge.py`), so that a search walks fewer, larger graphs: the collection's graphs are
the merged ones (`meta.hnsw_merged`, a list of (first segment, segments), always a prefix of the
labels), then every segment after them (`graphs`). A search is sized per graph: its ask is its share
of the labels, and the walks of one `ef_search` share one statement.

A collection made before segments (no `hnsw_segment_size` in its meta) keeps its one graph,
`documents_embedding_hnsw`, and is searched as before.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import PostgresStore  # which imports this module


# Passages per graph: 2**17, the folder's bound too. A million passages make 8 graphs to search.
SEGMENT_SIZE = 131_072
INDEX_PREFIX = "documents_embedding_hnsw"
OPCLASS = {"cosine": "vector_cosine_ops", "dot": "vector_ip_ops"}
# Standard deviations of the binomial past a segment's share of k that it is first asked for:
# Lucene's LAMBDA. A segment is walked as wide as it is asked (`ef_search`), and what a walk finds
# grows with its width, so the margin is wide: it keeps nearly all that asking every segment for all
# k found, for a fraction of the walk (docs/benchmarks.md), and a segment is rarely asked again.
MARGIN = 16.0
# Segments whose (empty) index the writer makes ahead of the one holding the last label, and how long
# it waits for the lock to make one (a merge's build holds it for minutes).
AHEAD = 2
LOCK_WAIT = "100ms"
# Parallel workers a background merge's build may take (PostgreSQL's `max_parallel_maintenance_workers`
# for that build; the server's default is 2): none, so a merge works on one core, as Lucene merges a
# segment on one thread, and searches and adds keep the others: a longer merge for steadier searches
# (measured in docs/benchmarks.md). A server with cores to spare may give it more (`hnsw` settings).
MERGE_WORKERS = 0
# The most `maintenance_work_mem` (MB) a merge's build asks of the database server, by default
# (`hnsw={"merge_memory_mb": ...}`). A graph whose build needs more is built past it on disk
# (pgvector: "graph no longer fits"), several times slower.
MERGE_MEMORY_MB = 2048


def segment_size(hnsw: dict[str, Any]) -> int:
    """The `segment_size` option of a collection's `hnsw` settings, checked (default `SEGMENT_SIZE`)."""
    size = hnsw.get("segment_size", SEGMENT_SIZE)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"segment_size must be a positive integer, not {size!r}")
    return size


def merge_workers(hnsw: dict[str, Any]) -> int:
    """The `merge_workers` option of a collection's `hnsw` settings, checked (default
    `MERGE_WORKERS`): the parallel workers a merge's index build may take beside its own process."""
    workers = hnsw.get("merge_workers", MERGE_WORKERS)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"merge_workers must be a non-negative integer, not {workers!r}")
    return workers


def merge_memory_mb(hnsw: dict[str, Any]) -> int:
    """The `merge_memory_mb` option of a collection's `hnsw` settings, checked (default
    `MERGE_MEMORY_MB`): the most `maintenance_work_mem` a merge's build may take, in MB (at least 1,
    PostgreSQL's own floor)."""
    cap = hnsw.get("merge_memory_mb", MERGE_MEMORY_MB)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ValueError(f"merge_memory_mb must be a positive integer (MB), not {cap!r}")
    return cap


def segment_meta(hnsw: dict[str, Any]) -> dict[str, int]:
    """A new HNSW collection's segment entries for its meta, every `hnsw` option checked when the
    collection is made, before anything exists, not at its first segment or merge."""
    merge_workers(hnsw)
    merge_memory_mb(hnsw)
    return {"hnsw_segment_size": segment_size(hnsw), "hnsw_segments": 0}


def index_options(hnsw: dict[str, Any]) -> str:
    """pgvector's build options from a collection's `hnsw` settings."""
    m = int(hnsw.get("connectivity", 16))
    ef = int(hnsw.get("expansion_add", 128))
    return f"WITH (m = {m}, ef_construction = {ef})"


Graph = tuple[int, int]  # (first segment, how many segments): labels (first * size, (first + n) * size]


def index_name(graph: Graph) -> str:
    """The partial index of a graph: `documents_embedding_hnsw_<n>` for segment n, and
    `documents_embedding_hnsw_<first>_<n>` for n segments merged from `first`."""
    first, count = graph
    return f"{INDEX_PREFIX}_{first}" if count == 1 else f"{INDEX_PREFIX}_{first}_{count}"


def graph_bounds(graph: Graph, size: int) -> tuple[int, int]:
    """The labels a graph holds: (low, high]."""
    return graph[0] * size, (graph[0] + graph[1]) * size


def add_segments(store: PostgresStore, last_label: int, size: int) -> None:
    """Inside the store's write transaction: make the index of every segment of `size` labels up to
    `AHEAD` past the one holding `last_label` (building one indexes the rows already in its range), and
    record how many exist. An index whose build would wait on another's (a merge) is left to the next
    commit. Most commits stay within the segments made and cost one read of the count."""
    meta = store.t("meta")
    found = store.conn.execute(f"SELECT value FROM {meta} WHERE key = 'hnsw_segments'").fetchone()
    have, need = read_count(found[0] if found else None), held_segments(last_label, size) + AHEAD
    if need <= have:
        return
    rows = store.conn.execute(f"SELECT key, value FROM {meta} WHERE key IN ('metric', 'hnsw')").fetchall()
    values = {key: json.loads(value) for key, value in rows}
    options = index_options(values.get("hnsw") or {})
    made = have
    for number in range(have, need):
        low, high = graph_bounds((number, 1), size)
        sql = (
            f"CREATE INDEX IF NOT EXISTS {index_name((number, 1))} ON {store.t('documents')} "
            f"USING hnsw (embedding {OPCLASS[values['metric']]}) {options} "
            f"WHERE label > {low} AND label <= {high}"
        )
        if not without_waiting(store.conn, sql):
            break
        made = number + 1
    if made > have:
        record_segments(store.conn, meta, made)


def record_segments(conn: Any, meta: str, made: int) -> None:
    """Record that the indexes of segments 0..`made` - 1 exist, unless a larger count is recorded
    (the writer and a merge's thread both make them)."""
    conn.execute(
        f"INSERT INTO {meta} AS m (key, value) VALUES ('hnsw_segments', %s) ON CONFLICT (key) "
        "DO UPDATE SET value = greatest(excluded.value::bigint, m.value::bigint)::text",
        (json.dumps(made),),
    )


def without_waiting(conn: Any, sql: str) -> bool:
    """Run `sql` inside the open transaction unless it waits longer than `LOCK_WAIT` for a lock:
    then undo it alone (a savepoint) and say so."""
    from psycopg.errors import LockNotAvailable

    before = conn.execute("SELECT current_setting('lock_timeout')").fetchone()[0]
    conn.execute("SELECT set_config('lock_timeout', %s, true)", [LOCK_WAIT])
    try:
        with conn.transaction():
            conn.execute(sql)
    except LockNotAvailable:
        return False
    finally:
        conn.execute("SELECT set_config('lock_timeout', %s, true)", [before])
    return True


def new_segment(first_label: int, last_label: int, size: int) -> bool:
    """Whether labels `first_label`..`last_label` (one insert) begin a segment: the commit that
    fills a segment may let segments merge (`postgres_graph_merge.py`)."""
    return (last_label - 1) // size != (first_label - 2) // size


def held_segments(last_label: int, size: int) -> int:
    """How many segments hold labels up to `last_label`."""
    return -(-int(last_label) // size)


def read_count(value: Any) -> int:
    """The segment count from its JSON `meta` value (0 when absent)."""
    return 0 if value is None else int(json.loads(value))


def read_merged(value: Any) -> list[Graph]:
    """The merged graphs from their JSON `meta` value (none when absent)."""
    return [] if value is None else [(int(first), int(count)) for first, count in json.loads(value)]


def graphs(merged: Sequence[Graph], segments: int) -> list[Graph]:
    """Every graph a search walks: the merged ones, then each segment after them up to `segments`."""
    start = merged[-1][0] + merged[-1][1] if merged else 0
    return [*merged, *((n, 1) for n in range(start, segments))]


def layout_sql(meta: str, state: str, documents: str) -> str:
    """Read the merged graphs and the last label in one statement, and take the documents table's
    share lock for the rest of the transaction: a merge drops the indexes it replaced only once no
    transaction holds it (`DROP INDEX CONCURRENTLY`), so every index of the layout read here stays
    there for the search."""
    return (
        f"SELECT (SELECT value FROM {meta} WHERE key = 'hnsw_merged'), (SELECT last_label FROM {state}), "
        f"EXISTS (SELECT FROM {documents} WHERE false)"
    )


def first_ask(k: int, part: float) -> int:
    """How many hits a graph holding `part` of the labels is first asked for, for the best k of
    all: its share of k plus `MARGIN` standard deviations of the binomial, at least 1 and at most k."""
    if part >= 1:
        return k
    share = k * part
    return max(1, min(k, math.ceil(share + MARGIN * math.sqrt(share * (1 - part)))))


def first_asks(k: int, layout: Sequence[Graph], last_label: int, size: int) -> list[int]:
    """`first_ask` for each graph of `layout`, by the labels it holds up to `last_label` (the newest
    is partly filled; deleted passages are not told apart: they thin every graph alike)."""
    if len(layout) <= 1:
        return [k] * len(layout)
    held = [max(min(high, last_label) - low, 1) for low, high in (graph_bounds(g, size) for g in layout)]
    total = sum(held)
    return [first_ask(k, n / total) for n in held]


def search_sql(
    documents: str, op: str, condition: str, layout: Sequence[Graph], numbers: Sequence[int], size: int
) -> str:
    """One statement: the best hits under `condition` of each graph of `layout` whose position is in
    `numbers`, as rows (position, label, distance). Parameters: vector, the condition's, vector, how
    many, per graph."""
    branches = []
    for number in numbers:
        low, high = graph_bounds(layout[number], size)
        branches.append(
            f"(SELECT {int(number)} AS segment, label, embedding {op} %s AS distance FROM {documents} "
            f"WHERE ({condition}) AND label > {low} AND label <= {high} "
            f"ORDER BY embedding {op} %s LIMIT %s)"
        )
    return " UNION ALL ".join(branches)


def best_of(rows: Sequence[tuple[int, int, float]], k: int) -> list[tuple[int, float]]:
    """The best k (label, distance) of every segment's rows (segment, label, distance), ties by label."""
    ranked = sorted(rows, key=lambda row: (row[2], row[1]))
    return [(int(label), float(distance)) for _, label, distance in ranked[:k]]


def ask_again(
    rows: Sequence[tuple[int, int, float]], best: Sequence[tuple[int, float]], k: int, asked: Sequence[int]
) -> list[int]:
    """The segments to ask again for all k: those asked (`asked`, by segment number) for fewer than k
    that gave as many, the last of which still ranks within the `best` k (ties included), so that
    more of theirs may too."""
    bar = best[-1][1] if len(best) == k else math.inf
    given: dict[int, int] = {}
    last: dict[int, float] = {}
    for segment, _, distance in rows:
        given[segment] = given.get(segment, 0) + 1
        last[segment] = max(last.get(segment, -math.inf), float(distance))
    return sorted(s for s, n in given.items() if asked[s] < k and n >= asked[s] and last[s] <= bar)
