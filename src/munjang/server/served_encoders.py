"""Which served encoder a stored collection can use, so that a collection of a served model never
loads a second copy of its weights.

A collection records its model as "default", a folder's absolute path, or a name / hub id as given
(`search.collection.inputs.model_key`). A served encoder matches when that record, resolved without
the network, is the encoder's `model_folder` (a served alias, `NAME=PATH`, is not matched by name:
the record names a model, not an alias). The served encoder was loaded with the folder's own
settings (pooling, prompts, sequence length), as a collection loads its model, so the vectors are
the same model's; only the backend may differ, and the automatic choice keeps cosine >= 0.9999 to
fp32.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .served_models import ServedModel


def _folder(record: str) -> Path | None:
    """The folder a collection's model record names, found without the network (None: unknown)."""
    from ..models.hub import resolve_model_path

    try:
        return resolve_model_path(None if record == "default" else record, local_files_only=True).resolve()
    except Exception:  # not installed, not cached, not a model: the collection loads it itself
        return None


def served_encoder_for(record: str, models: Mapping[str, ServedModel]) -> ServedModel | None:
    """The served encoder whose model the collection record `record` names, or None."""
    folders = {
        Path(encoder.model_folder).resolve(): encoder
        for encoder in models.values()
        if encoder.model_folder is not None
    }
    if not folders:
        return None
    folder = _folder(record)
    return folders.get(folder) if folder is not None else None


def share_served_encoder(collection: Any, models: Mapping[str, ServedModel]) -> Any:
    """`collection`, encoding with the served encoder of its model when one is served."""
    encoder = served_encoder_for(str(collection.config["model"]), models)
    if encoder is not None:
        collection.use_encoder(encoder)
    return collection
