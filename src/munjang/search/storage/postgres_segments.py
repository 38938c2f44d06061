"""pgvector's HNSW kept as several graphs of bounded size: partial indexes over ranges of labels.

Inserting into one pgvector graph costs more as it grows (bench/collection_scale.py measured the
database's CPU per passage near doubling from the first 100,000 passages to the third), the cause the
folder backend's graphs had before their segments (`index/segmented_graph.py`). Here segment n is
the partial index `documents_embedding_hnsw_<n>` over labels in (n * size, (n + 1) * size]. Labels
only grow (bigserial, never reused), so inserts go to the newest segment and an older graph no
longer changes but for deletions.

The writer makes a segment's index in the transaction that first stores a label in its range, and
records how many exist (`meta.hnsw_segments`) in the same transaction: so whatever a snapshot of the
database holds, every label in it lies in a segment it counts. A search reads that count (and the
last label) in the statement that sets `hnsw.ef_search`, then asks every segment in one statement: a
`UNION ALL` of per-range `ORDER BY embedding <op> q LIMIT n`. All statements read one snapshot (a
repeatable-read transaction), so a segment committed between them is not missed. The range bounds
are written into the SQL as literals, because a generic plan with parameters cannot prove a partial
index's predicate.

Each segment is first asked for its share of k, not all of k (`first_asks`): a walk's cost grows
with `ef_search`, and a hybrid search over documents asks for 400 passages (100 candidates, 4 passages
each), so asking each of 8 graphs for 400 made the dense side of a search at 1M cost 8 walks at
`ef_search` 400. The share is Lucene's "optimistic" per-segment k (k times the segment's part of
the labels, plus standard deviations of the binomial; the newest segment is partly filled, so the
others' parts are larger than 1 / segments), and so is the check that follows (`ask_again`): a
segment whose last hit still ranks within the merged best k (`best_of`) may hold more of them, and
is asked again for all k in the same snapshot.

A collection made before segments (no `hnsw_segment_size` in its meta) keeps its one graph,
`documents_embedding_hnsw`, and is searched as before.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Protocol


class PostgresStore(Protocol):
    """What `add_segments` needs of `postgres_store.PostgresStore` (named without importing it,
    which imports this module)."""

    conn: Any

    def t(self, table: str) -> str: ...


# Passages per graph: 2**17, the folder's bound too. A million passages make 8 graphs to search.
SEGMENT_SIZE = 131_072
INDEX_PREFIX = "documents_embedding_hnsw"
OPCLASS = {"cosine": "vector_cosine_ops", "dot": "vector_ip_ops"}
# Standard deviations of the binomial past a segment's share of k that it is first asked for:
# Lucene's LAMBDA. A segment is walked as wide as it is asked (`ef_search`), and what a walk finds
# grows with its width, so the margin is wide: it keeps nearly all that asking every segment for all
# k found, for a fraction of the walk (docs/benchmarks.md), and a segment is rarely asked again.
MARGIN = 16.0


def segment_size(hnsw: dict[str, Any]) -> int:
    """The `segment_size` option of a collection's `hnsw` settings, checked (default `SEGMENT_SIZE`)."""
    size = hnsw.get("segment_size", SEGMENT_SIZE)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"segment_size must be a positive integer, not {size!r}")
    return size


def index_options(hnsw: dict[str, Any]) -> str:
    """pgvector's build options from a collection's `hnsw` settings."""
    m = int(hnsw.get("connectivity", 16))
    ef = int(hnsw.get("expansion_add", 128))
    return f"WITH (m = {m}, ef_construction = {ef})"


def bounds(number: int, size: int) -> tuple[int, int]:
    """The labels segment `number` holds: (low, high]."""
    return number * size, (number + 1) * size


def add_segments(store: PostgresStore, last_label: int, size: int) -> None:
    """Inside the store's write transaction: make the index of every segment of `size` labels up to
    the one holding `last_label` (building one indexes the rows already in its range), and record
    their count. Most inserts stay within the newest segment and cost one read of the count."""
    meta = store.t("meta")
    found = store.conn.execute(f"SELECT value FROM {meta} WHERE key = 'hnsw_segments'").fetchone()
    have, need = read_count(found[0] if found else None), -(-last_label // size)
    if need <= have:
        return
    rows = store.conn.execute(f"SELECT key, value FROM {meta} WHERE key IN ('metric', 'hnsw')").fetchall()
    values = {key: json.loads(value) for key, value in rows}
    options = index_options(values.get("hnsw") or {})
    for number in range(have, need):
        low, high = bounds(number, size)
        store.conn.execute(
            f"CREATE INDEX {INDEX_PREFIX}_{number} ON {store.t('documents')} "
            f"USING hnsw (embedding {OPCLASS[values['metric']]}) {options} "
            f"WHERE label > {low} AND label <= {high}"
        )
    store.conn.execute(
        f"INSERT INTO {meta} (key, value) VALUES ('hnsw_segments', %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (json.dumps(need),),
    )


def read_count(value: Any) -> int:
    """The segment count from its JSON `meta` value (0 when absent)."""
    return 0 if value is None else int(json.loads(value))


def count_sql(meta: str, state: str) -> str:
    """Set `hnsw.ef_search` for this transaction (parameter: its value as text) and read the
    segment count and the last label given, in one statement: a search costs no more round trips
    than with one graph."""
    return (
        "SELECT set_config('hnsw.ef_search', %s, true), "
        f"(SELECT value FROM {meta} WHERE key = 'hnsw_segments'), (SELECT last_label FROM {state})"
    )


def first_ask(k: int, part: float) -> int:
    """How many hits a segment holding `part` of the labels is first asked for, for the best k of
    all: its share of k plus `MARGIN` standard deviations of the binomial, at least 1 and at most k."""
    if part >= 1:
        return k
    share = k * part
    return max(1, min(k, math.ceil(share + MARGIN * math.sqrt(share * (1 - part)))))


def first_asks(k: int, segments: int, last_label: int, size: int) -> list[int]:
    """`first_ask` for each of `segments` segments of `size` labels, the newest holding those up to
    `last_label` (deleted passages are not told apart: they thin every segment alike)."""
    if segments <= 1:
        return [k] * segments
    newest = min(max(last_label - (segments - 1) * size, 1), size)
    total = (segments - 1) * size + newest
    return [first_ask(k, (size if n < segments - 1 else newest) / total) for n in range(segments)]


def search_sql(documents: str, op: str, condition: str, numbers: Sequence[int], size: int) -> str:
    """One statement: the best hits under `condition` of each segment in `numbers`, as rows
    (segment, label, distance). Parameters: vector, the condition's, vector, how many, per segment."""
    branches = []
    for number in numbers:
        low, high = bounds(number, size)
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
