"""The contract every pipeline module follows: a torch module that maps a feature dict to a
feature dict and saves/loads its own config in its own folder (sentence-transformers layout)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from .._util.json_files import read_json as read_json
from .._util.json_files import write_json as write_json
from ..errors import CorruptModelError

Features = dict[str, Any]


class Module(nn.Module, ABC):
    """A step of a `SentenceEncoder` pipeline.

    `st_type` is the class path written to `modules.json` so that sentence-transformers loads
    what munjang saves; `folder_name` is the default sub-folder name ("" = the model root).
    """

    st_type: ClassVar[str] = ""
    folder_name: ClassVar[str] = ""

    @abstractmethod
    def forward(self, features: Features) -> Features:
        """Read the features this module needs and add (or replace) the ones it produces."""

    def get_config_dict(self) -> dict[str, Any]:
        """The JSON-serialisable config that `load` reads back."""
        return {}

    def save(self, path: str | Path) -> None:
        """Write this module's config (and weights, if any) into `path`."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        write_json(path / "config.json", self.get_config_dict())

    @classmethod
    @abstractmethod
    def load(cls, path: str | Path, **kwargs: Any) -> Module:
        """Rebuild the module from what `save` wrote into `path`."""


def load_safetensors_state(path: Path) -> dict[str, torch.Tensor]:
    """Load a safetensors file to CPU, naming the file when it is corrupt."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path), device="cpu")
    except (SafetensorError, OSError, ValueError) as e:
        raise CorruptModelError(f"{path}: corrupt or truncated safetensors file ({e})") from e
