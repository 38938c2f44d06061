"""SpladePooling: MLM logits -> one sparse, vocabulary-wide vector per text (SPLADE).

For token logits w_ij (token i, vocabulary entry j) and attention mask m_i:

    relu:        s_ij = log(1 + relu(w_ij))
    log1p_relu:  s_ij = log(1 + log(1 + relu(w_ij)))      (OpenSearch's inference-free models)
    max:  v_j = max_i m_i s_ij      (SPLADE v2 and later)
    sum:  v_j = sum_i m_i s_ij      (the original SPLADE)

Every s_ij is >= 0, so masked tokens (0) never win a max; most v_j are exactly 0 for a trained model,
which is what makes the vector sparse. The config is sentence-transformers' (`pooling_strategy`,
`activation_function`, `word_embedding_dimension`, read also as `embedding_dimension`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import torch

from ..errors import ModelLoadError
from .base import Features, Module, read_json

POOLING_STRATEGIES = ("max", "sum")
ACTIVATIONS = ("relu", "log1p_relu")


def splade_pool(
    logits: torch.Tensor, attention_mask: torch.Tensor, strategy: str = "max", activation: str = "relu"
) -> torch.Tensor:
    """(batch, seq, vocab) logits and a (batch, seq) mask -> (batch, vocab) SPLADE weights."""
    scores = torch.log1p(torch.relu(logits))
    if activation == "log1p_relu":
        scores = torch.log1p(scores)
    scores = scores * attention_mask.unsqueeze(-1).to(scores.dtype)
    return scores.amax(dim=1) if strategy == "max" else scores.sum(dim=1)


class SpladePooling(Module):
    """Reduce MLM logits (`token_embeddings`) to a SPLADE `sentence_embedding` (batch, vocab)."""

    st_type: ClassVar[str] = "sentence_transformers.sparse_encoder.models.SpladePooling"
    folder_name: ClassVar[str] = "1_SpladePooling"

    def __init__(
        self,
        pooling_strategy: str = "max",
        activation_function: str = "relu",
        embedding_dimension: int | None = None,
    ) -> None:
        super().__init__()
        if pooling_strategy not in POOLING_STRATEGIES:
            raise ValueError(f"unknown SPLADE pooling_strategy {pooling_strategy!r}; choose max or sum")
        if activation_function not in ACTIVATIONS:
            raise ValueError(
                f"unknown SPLADE activation_function {activation_function!r}; choose relu or log1p_relu"
            )
        self.pooling_strategy = pooling_strategy
        self.activation_function = activation_function
        self.embedding_dimension = embedding_dimension

    def forward(self, features: Features) -> Features:
        features["sentence_embedding"] = splade_pool(
            features["token_embeddings"],
            features["attention_mask"],
            self.pooling_strategy,
            self.activation_function,
        )
        return features

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "pooling_strategy": self.pooling_strategy,
            "activation_function": self.activation_function,
            "word_embedding_dimension": self.embedding_dimension,
        }

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> SpladePooling:
        file = Path(path) / "config.json"
        config = read_json(file) if file.exists() else {}
        if not isinstance(config, dict):
            raise ModelLoadError(f"{file}: expected a JSON object")
        dim = config.get("word_embedding_dimension", config.get("embedding_dimension"))
        try:
            return cls(
                str(config.get("pooling_strategy", "max")),
                str(config.get("activation_function", "relu")),
                int(dim) if dim is not None else None,
            )
        except (TypeError, ValueError) as e:
            raise ModelLoadError(f"{file}: {e}") from e

    def extra_repr(self) -> str:
        return f"pooling_strategy={self.pooling_strategy}, activation_function={self.activation_function}"
