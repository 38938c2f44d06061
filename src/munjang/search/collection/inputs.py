"""What users hand a collection, checked before anything is written: ids, texts, metadata, and
how a collection records the model it was made with."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def model_key(model: str | os.PathLike[str] | None) -> str:
    """How a collection records its model: "default", a folder's absolute path, or the name as given."""
    if model is None or str(model) == "default":
        return "default"
    path = Path(model)
    return str(path.resolve()) if path.exists() else str(model)


def remote_name(encoder: Any) -> str | None:
    """The name of a remote encoder (`openai:...`, `remote:...`), which a collection records in place
    of a model folder; None for a local one."""
    from ...encoders.remote import RemoteEncoder

    return encoder.name if isinstance(encoder, RemoteEncoder) else None


def check_texts(ids: Sequence[str], texts: Sequence[str]) -> None:
    """Ids and texts of one `add`: as many of each, ids unique non-empty strings, texts non-empty."""
    if isinstance(ids, str) or isinstance(texts, str):
        raise TypeError("ids and texts must be sequences of strings, not one string")
    if len(ids) != len(texts):
        raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
    seen: set[str] = set()
    for i, (doc_id, text) in enumerate(zip(ids, texts, strict=True)):
        if not isinstance(doc_id, str) or not doc_id:
            raise ValueError(f"document {i}: the id must be a non-empty string, got {doc_id!r}")
        if doc_id in seen:
            raise ValueError(f"document {i}: id {doc_id!r} appears twice in this batch")
        seen.add(doc_id)
        if not isinstance(text, str):
            raise TypeError(f"document {doc_id!r}: text is {type(text).__name__}, not str")
        if not text.strip():
            raise ValueError(f"document {doc_id!r}: the text is empty")


def metadata_json(doc_id: str, metadata: Any) -> str:
    """A document's metadata as the JSON stored with it (a dict of JSON values, or nothing)."""
    if metadata is None:
        return "{}"
    if not isinstance(metadata, Mapping):
        raise TypeError(f"document {doc_id!r}: metadata must be a dict, got {type(metadata).__name__}")
    try:
        return json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"document {doc_id!r}: metadata is not JSON-serialisable ({e})") from None


# The prompt names a collection encodes documents with, first found in the model's prompts.
DOCUMENT_PROMPTS = ("document", "passage", "corpus")


def prompt_names(encoder: Any, query: str | None, document: str | None) -> tuple[str | None, str | None]:
    """The query and document prompt names a new collection records: the given ones (which the model
    must have), else "query" and the first of DOCUMENT_PROMPTS the model has."""
    prompts = getattr(encoder, "prompts", {}) or {}
    if query is None and "query" in prompts:
        query = "query"
    if document is None:
        document = next((p for p in DOCUMENT_PROMPTS if p in prompts), None)
    for name in (query, document):
        if name is not None and name not in prompts:
            raise ValueError(f"the model has no prompt {name!r} (its prompts: {sorted(prompts) or 'none'})")
    return query, document
