"""Stored passages analysed again for BM25 when a collection's analysis changes (a user dictionary
edit): their documents are planned into passages again, as `Collection.add` planned them, and each
passage's lexical text is tokenized with the new analysis. No vector is encoded.

The new tokens are collected while readers go on searching with the old ones; the caller then
writes them and the new settings in one transaction (`Store.put_analysis`), so a reader sees the
old analysis or the new, never a mix.
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


def reanalysed_tokens(
    store: Store, encoding: Encoding, chunking: ChunkingConfig, analyzer: Any, progress: bool
) -> list[tuple[int, str]]:
    """(label, tokens as JSON) of every stored passage, tokenized by `analyzer`'s document side."""
    rows: list[tuple[int, str]] = []
    bar = tqdm(total=store.count(), desc="analysing", unit="doc", disable=not progress)
    try:
        batch: list[str] = []
        for doc_id in store.iter_ids():
            batch.append(doc_id)
            if len(batch) == BATCH:
                rows += _batch(store, encoding, chunking, analyzer, batch)
                bar.update(len(batch))
                batch = []
        if batch:
            rows += _batch(store, encoding, chunking, analyzer, batch)
            bar.update(len(batch))
    finally:
        bar.close()
    return rows


def _batch(
    store: Store, encoding: Encoding, chunking: ChunkingConfig, analyzer: Any, ids: list[str]
) -> list[tuple[int, str]]:
    docs = store.documents_by_id(ids)
    found = [docs[i] for i in ids if i in docs]
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
