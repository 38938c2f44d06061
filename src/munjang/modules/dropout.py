"""Dropout on the sentence vector: zeroes a fraction `p` of its entries while training (scaled by 1/(1-p)).

Part of the cross-encoder's classification head (dropout -> dense -> GELU -> dropout -> projection);
a no-op at inference. Saved as sentence-transformers' `Dropout` module: `{"dropout": p}`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from torch import nn

from .base import Features, Module, read_json


class Dropout(Module):
    """`nn.Dropout(p)` on `sentence_embedding`."""

    st_type: ClassVar[str] = "sentence_transformers.models.Dropout"
    folder_name: ClassVar[str] = "Dropout"

    def __init__(self, dropout: float = 0.1) -> None:
        super().__init__()
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), not {dropout}")
        self.dropout = dropout
        self.layer = nn.Dropout(dropout)

    def forward(self, features: Features) -> Features:
        features["sentence_embedding"] = self.layer(features["sentence_embedding"])
        return features

    def get_config_dict(self) -> dict[str, Any]:
        return {"dropout": self.dropout}

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> Dropout:
        file = Path(path) / "config.json"
        config = read_json(file) if file.exists() else {}
        return cls(float(config.get("dropout", 0.1)))

    def extra_repr(self) -> str:
        return f"p={self.dropout}"
