"""Stored passages analysed again for BM25 when a collection's analysis changes (a user dictionary
edit): their documents are planned into passages again, as `Collection.add` planned them, and each
passage's lexical text is tokenized with the new analysis. No vector is encoded.

The new tokens are staged beside the stored ones a batch at a time (`Store.stage_tokens`, each batch
committed: an interrupted run resumes after what it staged), while readers go on searching with the
old ones; the caller then switches to them and the new settings in one transaction
(`Store.put_analysis`), so a reader sees the old analysis or the new, never a mix.
"""

from __future__ import annotations

import json
from typing import Any

from tqdm.auto import tqdm

from ..backends.base import CollectionError, Store
from .encoding import Encoding
from .passages import ChunkingConfig, title_of
from .sections import outline_of

# Documents planned and tokenized per step.
BATCH = 256


def reanalyse(
    store: Store, encoding: Encoding, chunking: ChunkingConfig, analyzer: Any, progress: bool
) -> int:
    """Stage the tokens `analyzer`'s document side makes of every stored passage (`Store.stage_tokens`),
    a batch of documents per commit, after the passages staged already (by an earlier run of the
    same edit that was interrupted; the caller empties the staging for a new one). Returns how many
    passages are staged."""
    done = store.staged_through()
    staged = 0
    bar = tqdm(total=store.count(), desc="analysing", unit="doc", disable=not progress)
    try:
        batch: list[str] = []
        for doc_id in [*store.iter_ids(), None]:
            if doc_id is not None:
                batch.append(doc_id)
            if batch and (doc_id is None or len(batch) == BATCH):
                rows = _batch(store, encoding, chunking, analyzer, batch, done)
                store.stage_tokens(rows)
                staged += len(rows)
                bar.update(len(batch))
                batch = []
    finally:
        bar.close()
    return staged


def _batch(
    store: Store, encoding: Encoding, chunking: ChunkingConfig, analyzer: Any, ids: list[str], done: int
) -> list[tuple[int, str]]:
    """The new tokens of these documents' passages, but those of documents staged already (a
    document is staged whole: its first label at most `done`)."""
    docs = store.documents_by_id(ids)
    found = [docs[i] for i in ids if i in docs and docs[i].label > done]
    if not found:
        return []
    texts = [d.text for d in found]
    plans = encoding.plan(
        texts,
        [title_of(d.metadata, chunking) for d in found],
        [outline_of(d.metadata, len(d.text)) for d in found],
    )
    lexical = list(dict.fromkeys(p.lexical for plan in plans for p in plan))
    tokens = dict(zip(lexical, analyzer.documents.tokenize_many(lexical), strict=True))
    rows: list[tuple[int, str]] = []
    for doc, plan in zip(found, plans, strict=True):
        labels = list(range(doc.label, doc.label + len(plan)))
        stored = store.documents(labels)
        if any(stored.get(x) is None or stored[x].id != doc.id for x in labels):
            raise CollectionError(
                f"document {doc.id!r} no longer plans into the passages stored for it (was the "
                "chunking or the model changed?); nothing was changed"
            )
        rows += [
            (x, json.dumps(tokens[p.lexical], ensure_ascii=False)) for x, p in zip(labels, plan, strict=True)
        ]
    return rows
