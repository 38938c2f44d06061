"""Pooling: token vectors -> one sentence vector.

For token vectors h_1..h_n of one sentence with mask m_i in {0, 1} (1 = real token):

- cls:                    h_1 (the first real token)
- mean:                   sum_i m_i h_i / sum_i m_i
- max:                    max_i over {h_i : m_i = 1}, element-wise
- mean_sqrt_len_tokens:   sum_i m_i h_i / sqrt(sum_i m_i)
- weightedmean:           sum_i i m_i h_i / sum_i i m_i   (later tokens weigh more; i counts from 1)
- lasttoken:              h_k with k the last real token (for decoder-style embedders)

Several modes at once give their concatenation, in the canonical order above (the order the
sentence-transformers config format implies), so a saved model loads back identically.
Padding never enters a mean or a max: it is masked before the reduction.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch

from .base import Features, Module, read_json

POOLING_MODES: tuple[str, ...] = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")

# The boolean keys of the classic sentence-transformers config, one per mode.
_LEGACY_KEYS: dict[str, str] = {
    "cls": "pooling_mode_cls_token",
    "max": "pooling_mode_max_tokens",
    "mean": "pooling_mode_mean_tokens",
    "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
    "weightedmean": "pooling_mode_weightedmean_tokens",
    "lasttoken": "pooling_mode_lasttoken",
}
_ALIASES = {
    "mean_tokens": "mean",
    "max_tokens": "max",
    "cls_token": "cls",
    "weighted_mean": "weightedmean",
    "weighted-mean": "weightedmean",
    "mean_sqrt_len": "mean_sqrt_len_tokens",
    "last_token": "lasttoken",
    "last-token": "lasttoken",
}


def normalize_modes(modes: str | Sequence[str]) -> tuple[str, ...]:
    """Validate pooling mode names (a name, a list, or "cls+mean+max") and put them in canonical order."""
    if isinstance(modes, str):
        modes = [m for m in modes.replace(",", "+").split("+") if m]
    wanted = set()
    for mode in modes:
        name = _ALIASES.get(mode.strip().lower(), mode.strip().lower())
        if name not in POOLING_MODES:
            raise ValueError(f"unknown pooling mode {mode!r}; choose from {', '.join(POOLING_MODES)}")
        wanted.add(name)
    if not wanted:
        raise ValueError("at least one pooling mode is needed")
    return tuple(m for m in POOLING_MODES if m in wanted)


def pool(
    token_embeddings: torch.Tensor,
    attention_mask: torch.Tensor,
    modes: Sequence[str],
    prompt_length: int = 0,
) -> torch.Tensor:
    """Pool a padded batch (batch, seq, dim) with its mask (batch, seq) into (batch, dim * len(modes)).

    `prompt_length` > 0 drops that many leading tokens (a prompt) from the pooled set.
    Half-precision inputs are accumulated in float32 and returned in their own dtype.
    """
    mask = attention_mask.to(torch.bool)
    if prompt_length:
        mask = mask.clone()
        mask[:, :prompt_length] = False
    dtype = token_embeddings.dtype
    acc = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    fmask = mask.unsqueeze(-1).to(acc)
    outputs: list[torch.Tensor] = []
    summed: torch.Tensor | None = None
    count: torch.Tensor | None = None
    for mode in modes:
        if mode == "cls":
            first = mask.to(torch.int32).argmax(dim=1)
            rows = torch.arange(first.shape[0], device=first.device)  # traced with the batch size
            outputs.append(token_embeddings[rows, first])
        elif mode == "max":
            masked = token_embeddings.masked_fill(~mask.unsqueeze(-1), float("-inf"))
            outputs.append(masked.max(dim=1).values)
        elif mode in ("mean", "mean_sqrt_len_tokens"):
            if summed is None or count is None:
                summed = (token_embeddings.to(acc) * fmask).sum(dim=1)
                count = fmask.sum(dim=1).clamp(min=1e-9)
            denominator = count if mode == "mean" else count.sqrt()
            outputs.append((summed / denominator).to(dtype))
        elif mode == "weightedmean":
            positions = torch.arange(1, token_embeddings.shape[1] + 1, device=mask.device, dtype=acc)
            weights = fmask * positions.view(1, -1, 1)
            weighted = (token_embeddings.to(acc) * weights).sum(dim=1)
            outputs.append((weighted / weights.sum(dim=1).clamp(min=1e-9)).to(dtype))
        elif mode == "lasttoken":
            seq_len = mask.shape[1]
            last = seq_len - 1 - mask.flip(1).to(torch.int32).argmax(dim=1)
            outputs.append(token_embeddings[torch.arange(len(last), device=last.device), last])
        else:
            raise ValueError(f"unknown pooling mode {mode!r}")
    return outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=1)


class Pooling(Module):
    """Reduce `token_embeddings` to `sentence_embedding` with one or several pooling modes.

    `include_prompt=False` leaves prompt tokens (an instruction prefix) out of the pooled set,
    as instruction-tuned embedders expect; the encoder passes the prompt's token count.
    """

    st_type: ClassVar[str] = "sentence_transformers.models.Pooling"
    folder_name: ClassVar[str] = "1_Pooling"

    def __init__(
        self,
        embedding_dimension: int,
        pooling_mode: str | Sequence[str] = "mean",
        include_prompt: bool = True,
    ) -> None:
        super().__init__()
        self.embedding_dimension = int(embedding_dimension)
        self.modes = normalize_modes(pooling_mode)
        self.include_prompt = include_prompt

    @property
    def output_dimension(self) -> int:
        return self.embedding_dimension * len(self.modes)

    def forward(self, features: Features) -> Features:
        prompt_length = 0 if self.include_prompt else int(features.get("prompt_length", 0))
        features["sentence_embedding"] = pool(
            features["token_embeddings"], features["attention_mask"], self.modes, prompt_length
        )
        return features

    def get_config_dict(self) -> dict[str, Any]:
        config: dict[str, Any] = {"word_embedding_dimension": self.embedding_dimension}
        for mode, key in _LEGACY_KEYS.items():
            config[key] = mode in self.modes
        config["include_prompt"] = self.include_prompt
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Pooling:
        """Build from either config format: classic boolean keys or the newer `pooling_mode` key."""
        dim = config.get("word_embedding_dimension", config.get("embedding_dimension"))
        if dim is None:
            raise ValueError("pooling config names no embedding dimension")
        if "pooling_mode" in config:
            modes: str | Sequence[str] = config["pooling_mode"]
        else:
            modes = [mode for mode, key in _LEGACY_KEYS.items() if config.get(key)]
        return cls(int(dim), modes, include_prompt=bool(config.get("include_prompt", True)))

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> Pooling:
        return cls.from_config(read_json(Path(path) / "config.json"))

    def extra_repr(self) -> str:
        modes = "+".join(self.modes)
        return f"dim={self.embedding_dimension}, modes={modes}, include_prompt={self.include_prompt}"
