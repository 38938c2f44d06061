"""LogitScore: a causal language model's next-token logits at the last position -> one relevance score.

How sentence-transformers (>= 5.4) stores an LLM reranker (Qwen3-Reranker, mxbai-rerank-v2, ...): a
`Transformer` with `transformer_task: "text-generation"` followed by this module. The score is
`logit(true_token) - logit(false_token)` (the log-odds of "yes" against "no"), or `logit(true_token)`
alone when no false token is set. Its config is `{true_token_id, false_token_id, module_input_name}`.

The logits it reads may hold the whole vocabulary (shape `(batch, positions, vocab)`), or only the
rows of the token ids listed in `features["causal_logit_ids"]`: munjang's `CausalLMTransformer`
computes just those two rows of the output head when it knows them, not 150k vocabulary columns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from ..errors import ModelLoadError
from .base import Features, Module, read_json

LOGIT_IDS_KEY = "causal_logit_ids"


class LogitScore(Module):
    """`features["scores"]` (batch, 1) from the last position's logits of one or two vocabulary tokens."""

    st_type: ClassVar[str] = "sentence_transformers.cross_encoder.modules.logit_score.LogitScore"
    folder_name: ClassVar[str] = "LogitScore"

    def __init__(
        self, true_token_id: int, false_token_id: int | None = None, module_input_name: str = "causal_logits"
    ) -> None:
        super().__init__()
        if true_token_id < 0 or (false_token_id is not None and false_token_id < 0):
            raise ValueError("token ids must be non-negative")
        self.true_token_id = int(true_token_id)
        self.false_token_id = None if false_token_id is None else int(false_token_id)
        self.module_input_name = module_input_name

    @property
    def token_ids(self) -> list[int]:
        """The vocabulary rows the score needs: the true token, then the false one if any."""
        return [self.true_token_id] + ([] if self.false_token_id is None else [self.false_token_id])

    def forward(self, features: Features) -> Features:
        logits = features[self.module_input_name][:, -1]  # left padding: the last position is real
        ids = features.get(LOGIT_IDS_KEY)
        columns = self.token_ids if ids is None else [list(ids).index(t) for t in self.token_ids]
        scores = logits[:, columns[0]]
        if len(columns) == 2:
            scores = scores - logits[:, columns[1]]
        features["scores"] = scores.unsqueeze(1)
        return features

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "true_token_id": self.true_token_id,
            "false_token_id": self.false_token_id,
            "module_input_name": self.module_input_name,
        }

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> LogitScore:
        config = read_json(Path(path) / "config.json")
        if not isinstance(config.get("true_token_id"), int):
            raise ModelLoadError(
                f"{Path(path) / 'config.json'}: true_token_id must be a token id (an integer)"
            )
        false_id = config.get("false_token_id")
        return cls(config["true_token_id"], false_id, str(config.get("module_input_name", "causal_logits")))

    def extra_repr(self) -> str:
        return f"true_token_id={self.true_token_id}, false_token_id={self.false_token_id}"
