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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from ..backends.base import CollectionError

if TYPE_CHECKING:
    from .collection import Collection

# Documents read from the source and added to the target at a time.
BATCH = 1000


def copy_documents(
    source: Collection, target: Collection, *, batch_size: int = 32, show_progress_bar: bool | None = None
) -> None:
    """Add to `target` every document of `source` it lacks, `BATCH` at a time."""
    with tqdm(total=len(source), desc="reindex", unit="doc", disable=show_progress_bar is False) as bar:
        ids: list[str] = []
        for doc_id in source.ids():
            ids.append(doc_id)
            if len(ids) == BATCH:
                _copy(source, target, ids, batch_size)
                bar.update(len(ids))
                ids = []
        if ids:
            _copy(source, target, ids, batch_size)
            bar.update(len(ids))


def target_settings(source: Collection, chunking: Mapping[str, Any] | None) -> dict[str, Any]:
    """`Collection.create`'s settings for a reindex target: the source's, `chunking` merged in."""
    config = source.config
    if any(config.get(kind) for kind in ("sparse", "multi_vector", "m3")):
        raise CollectionError(
            f"{source.location}: reindexing a collection with extra retrievers is not supported"
        )
    return {
        "index": config["index"],
        "metric": config["metric"],
        "tokenizer": config["lexical"]["tokenizer"],
        "bm25": {k: v for k, v in config["lexical"].items() if k != "tokenizer"},
        "hnsw": config.get("hnsw") or None,
        "chunking": {**source.chunking.to_dict(), **dict(chunking or {})},
    }


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
