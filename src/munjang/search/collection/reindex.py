"""Reindex: a new collection built from a collection's stored documents with another model or
passage budget, for moving traffic to it by an alias (`aliases.py`) once it is complete.

The source is read, never changed, and may be searched and written meanwhile (the documents added
after the reindex read past them are not carried: add them to both, or run it again, which adds
only what is missing). The target takes the source's metric, index, BM25 and chunking settings,
with `model` and `chunking` changed as asked. Documents are added `batch` at a time, each batch
committed, with `on_conflict="skip"`: a reindex that was stopped resumes where it stopped when run
again, encoding nothing twice.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from ..backends.base import CollectionError

if TYPE_CHECKING:
    from .collection import Collection

# Documents read from the source and added to the target at a time.
BATCH = 1000


def reindex(
    source: Collection,
    target: str | os.PathLike[str],
    *,
    model: str | os.PathLike[str] | None = None,
    backend: str | None = None,
    chunking: Mapping[str, Any] | None = None,
    encoder: Any = None,
    batch_size: int = 32,
    show_progress_bar: bool | None = None,
) -> Collection:
    """Build (or resume building) `target` from `source`'s documents; returns it, open."""
    from .collection import Collection

    config = source.config
    if any(config.get(kind) for kind in ("sparse", "multi_vector", "m3")):
        raise CollectionError(
            f"{source.location}: reindexing a collection with extra retrievers is not supported"
        )
    try:
        col = Collection.open(target, backend=backend, encoder=encoder)
    except CollectionError:
        col = Collection.create(
            target,
            model,
            backend=backend,
            encoder=encoder,
            index=config["index"],
            metric=config["metric"],
            tokenizer=config["lexical"]["tokenizer"],
            bm25={k: v for k, v in config["lexical"].items() if k != "tokenizer"},
            hnsw=config.get("hnsw") or None,
            chunking={**source.chunking.to_dict(), **dict(chunking or {})},
        )
    try:
        total = len(source)
        with tqdm(total=total, desc="reindex", unit="doc", disable=show_progress_bar is False) as bar:
            ids: list[str] = []
            for doc_id in source.ids():
                ids.append(doc_id)
                if len(ids) == BATCH:
                    _copy(source, col, ids, batch_size)
                    bar.update(len(ids))
                    ids = []
            if ids:
                _copy(source, col, ids, batch_size)
                bar.update(len(ids))
    except BaseException:
        col.close()
        raise
    return col


def _copy(source: Collection, target: Collection, ids: list[str], batch_size: int) -> None:
    docs = [d for d in source.get(ids) if d is not None]  # one deleted meanwhile is left out
    target.add(
        [d.id for d in docs],
        [d.text for d in docs],
        [d.metadata for d in docs],
        on_conflict="skip",
        batch_size=batch_size,
        show_progress_bar=False,
    )
