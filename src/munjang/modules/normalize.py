"""Normalize: scale the sentence vector to unit L2 length, so dot product equals cosine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import torch.nn.functional as F

from .base import Features, Module


class Normalize(Module):
    """x / max(||x||_2, eps). Has no config and no weights; its folder is written empty."""

    st_type: ClassVar[str] = "sentence_transformers.models.Normalize"
    folder_name: ClassVar[str] = "2_Normalize"

    def forward(self, features: Features) -> Features:
        features["sentence_embedding"] = F.normalize(features["sentence_embedding"], p=2, dim=1)
        return features

    def save(self, path: str | Path) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> Normalize:
        return cls()
