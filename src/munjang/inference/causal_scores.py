"""An LLM reranker's scores on OpenVINO: the decoder and the two output-head rows that `LogitScore`
reads, converted from the model in memory into one graph whose output is `(batch, 2)` logits at the last
position, not the `(batch, vocabulary)` row (151,936 columns for Qwen3) a generic export would give.

The conversion, precisions, probe check and rebuilds are `pair_scores.OpenVINOScorer`'s: traced with
eager attention, since SDPA's boolean mask gave the left padding NaN.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .base import BackendError
from .pair_scores import PRECISIONS, OpenVINOScorer

__all__ = ["PRECISIONS", "LastTokenLogits", "OpenVINOCausalScorer"]


class LastTokenLogits(nn.Module):
    """Decoder -> last position's hidden state -> logits of the chosen vocabulary rows only."""

    weight: torch.Tensor
    bias: torch.Tensor | None

    def __init__(self, causal_lm: Any, rows: list[int]) -> None:
        super().__init__()
        self.decoder = causal_lm.get_decoder()
        head = causal_lm.get_output_embeddings()
        index = torch.tensor(rows)
        self.register_buffer("weight", head.weight.detach()[index].clone().float())
        bias = None if head.bias is None else head.bias.detach()[index].clone().float()
        self.register_buffer("bias", bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.decoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, -1]
        return nn.functional.linear(hidden.float(), self.weight, self.bias)


class OpenVINOCausalScorer(OpenVINOScorer):
    """Scores batches of left-padded token ids with a compiled OpenVINO graph (thread-safe)."""

    def __init__(self, transformer: Any, precision: str = "fp32", threads: int | None = None) -> None:
        if precision not in PRECISIONS:
            raise ValueError(
                f"an LLM reranker runs on OpenVINO at {' or '.join(PRECISIONS)}, not {precision!r}"
            )
        if transformer.score_token_ids is None:
            raise BackendError("OpenVINO scoring needs the LogitScore token ids (a causal-LM cross-encoder)")
        super().__init__(precision, threads)
        self.transformer = transformer

    def parameters(self) -> list[torch.Tensor]:
        return list(self.transformer.parameters())

    def module(self) -> tuple[nn.Module, Any]:
        lm = self.transformer.auto_model
        return LastTokenLogits(lm, list(self.transformer.score_token_ids)).eval(), lm

    def probe(self) -> dict[str, torch.Tensor]:
        ids = {"input_ids": [[1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 12], [5, 4, 3, 2, 1, 2]]}
        return dict(self.transformer.collate(ids, [0, 1, 2]))
