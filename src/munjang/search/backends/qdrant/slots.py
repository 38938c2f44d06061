"""BM25 slots of a Qdrant collection: a re-analysis (a user dictionary edit, `Collection.set_analysis`)
fills a second named sparse vector beside the one searches use, then switches to it in one write.

A slot is a named sparse vector (`bm25`, then `bm25_2`, `bm25_3`, …), the payload fields of each
text's first point in it (`bm25_2_members`, `bm25_2_terms`, …) and its statistics file
(`bm25_2_stats.db`). The slot searches use is named in the store's configuration (`SLOT_KEY`), so
it moves with the new tokens and analysis settings in the store's one transaction (`switch`): a
reader searches the old slot with the old analysis or the new slot with the new one, never a mix.

- `stage`: each batch of a re-analysis is written to the pending slot (new weights and payload),
  then kept in the store's staging table (`Store.stage_tokens`): a run killed between the two
  writes it again when resumed. The weights are made at the mean length of the slot searched
  (`made`), announced before the switch so a search bounds what they miss (`bm25.growth_bound`);
- `switch`: the pending slot's statistics counted from the staged tokens, its weights' mean length
  announced in Qdrant's state, then the store's transaction names it; the Qdrant state adopts it
  (`QdrantPoints.adopt`: the weights made again if the mean length drifted) and the old slot is
  dropped (`drop_slot`). A writer killed after the store's transaction finishes it at its next sync.

The dense vectors (and SPLADE, ColBERT) are never touched.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..base import CollectionError
from .bm25 import FIRST_SLOT, bm25_weights, members_field, payload_fields, stats_name, text_payload

if TYPE_CHECKING:
    from .backend import QdrantRecords
    from .index import QdrantPoints

SLOT_KEY = "qdrant_bm25"  # store configuration: the slot searches use (absent: FIRST_SLOT)
PENDING_KEY = "qdrant_bm25_pending"  # store configuration: {"slot", "made"} of a re-analysis under way
COUNT_BATCH = 10_000  # texts counted into the pending statistics per transaction


def next_slot(slot: str) -> str:
    """The slot a re-analysis fills beside `slot`."""
    number = 1 if slot == FIRST_SLOT else int(slot.rsplit("_", 1)[1])
    return f"{FIRST_SLOT}_{number + 1}"


def slot_low(state: dict[str, Any], slot: str) -> float | None:
    """The lowest mean length the weights of `slot` were made at (0: not recorded), or None when the
    Qdrant state describes neither that slot nor an announced pending one (a switch under way)."""
    if state.get("slot", FIRST_SLOT) == slot:
        return float(state.get("avgdl_low") or 0.0)
    pending = state.get("pending") or {}
    if pending.get("slot") == slot:
        return float(pending["avgdl_low"])
    return None


def stage(points: QdrantPoints, store: QdrantRecords, rows: list[tuple[int, str]], restart: bool) -> None:
    """Write these passages' new tokens (label, tokens JSON; whole documents) to the pending slot;
    `restart`: a new pending slot, emptied of the vectors an abandoned run left (the payload fields
    it left are overwritten on every text's first point, and a point with no vector in the slot is
    never a candidate in it)."""
    models = points.models
    points.sync(store)  # passages added since an interrupted run are points before their slot is written
    if restart:
        slot = next_slot(points.slot)
        totals = points.stats.totals()
        made = totals["length_sum"] / totals["texts"] if totals["length_sum"] else 1.0
        points.client.delete_vector_name(points.name, slot)
        config = models.SparseVectorNameConfig(sparse=models.SparseVectorConfig(modifier=models.Modifier.IDF))
        points.client.create_vector_name(points.name, slot, config)
        store.set_meta({PENDING_KEY: {"slot": slot, "made": made}})
    if not rows:
        return
    pending = store.meta_value(PENDING_KEY)
    if not pending:
        raise CollectionError(f"{store.path}: no re-analysis under way to stage tokens for")
    slot, made = str(pending["slot"]), float(pending["made"])
    docs = store.documents([label for label, _ in rows])
    groups: list[tuple[tuple[str, str], list[int]]] = []
    for label, tokens in sorted(rows):
        key = (docs[label].id, tokens)
        if groups and groups[-1][0] == key:
            groups[-1][1].append(label)
        else:
            groups.append((key, [label]))
    vectors, operations = [], []
    for (_, text), labels in groups:
        tokens = json.loads(text)
        indices, weights = bm25_weights(tokens, points.k1, points.b, made)
        vector = {slot: models.SparseVector(indices=indices, values=weights)}
        vectors.append(models.PointVectors(id=labels[0], vector=vector))
        payload = {members_field(slot): labels, **text_payload(tokens, slot)}
        operations.append(
            models.SetPayloadOperation(set_payload=models.SetPayload(payload=payload, points=[labels[0]]))
        )
    points.client.update_vectors(points.name, points=vectors, wait=True)
    points.client.batch_update_points(points.name, update_operations=operations, wait=True)


def switch(
    points: QdrantPoints, store: QdrantRecords, meta: dict[str, Any], put: Callable[[dict[str, Any]], None]
) -> None:
    """Count the pending slot's statistics, announce it, switch the store to it with `meta` (`put`:
    the store's one transaction), and adopt it in Qdrant."""
    pending = store.meta_value(PENDING_KEY)
    if not pending:
        raise CollectionError(f"{store.path}: no re-analysis under way to switch to")
    slot, made = str(pending["slot"]), float(pending["made"])
    points.sync(store)
    _count(points, store, slot)
    with points.lock:
        announced = {"slot": slot, "avgdl_low": made, "avgdl_high": made}
        points.write_state({**points.state, "pending": announced})
        put({**meta, SLOT_KEY: slot, PENDING_KEY: None})
        points.slot = slot
        points.adopt(store)


def _count(points: QdrantPoints, store: QdrantRecords, slot: str) -> None:
    """The pending slot's statistics from the staged tokens of the stored passages (from nothing:
    a resumed run counts again), at the store's watermark: a later push counts only what follows."""
    stats = points.stats_of(slot)
    watermark = store.watermark()
    texts: list[list[str]] = []
    reset, previous = True, None
    for doc_id, text in store.staged_rows():
        if previous == (doc_id, text):
            continue  # a later passage of the same window: counted once
        previous = (doc_id, text)
        texts.append(json.loads(text))
        if len(texts) == COUNT_BATCH:
            stats.apply(texts, [], watermark, reset=reset)
            texts, reset = [], False
    stats.apply(texts, [], watermark, reset=reset)


def drop_slot(points: QdrantPoints, slot: str) -> None:
    """Remove a slot searches no longer use: its vectors, its payload fields, its statistics file."""
    models = points.models
    points.client.delete_vector_name(points.name, slot)
    members = members_field(slot)
    carrying = models.Filter(must_not=[models.IsEmptyCondition(is_empty=models.PayloadField(key=members))])
    points.client.delete_payload(
        points.name, keys=[members, *payload_fields(slot)], points=models.FilterSelector(filter=carrying)
    )  # the texts' first points: the others carry no field of the slot
    points.forget_stats(slot)
    path = points.folder / stats_name(slot)
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
