"""TokenProjection: the linear layer that maps every token vector to the late-interaction size
(ColBERT's 128), as sentence-transformers' Dense on `token_embeddings` and PyLate's Dense store it:
`config.json` (in_features, out_features, bias, activation_function) + `model.safetensors` with
`linear.weight` (and `linear.bias`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from ...errors import CorruptModelError, ModelLoadError
from ...modules.base import load_safetensors_state, read_json, write_json
from ...modules.dense import activation_from_name, activation_name

ST_TYPE = "sentence_transformers.base.modules.dense.Dense"


class TokenProjection(nn.Module):
    """y = act(W x (+ b)) on each token vector; Identity activation and no bias by default (ColBERT)."""

    def __init__(
        self, in_features: int, out_features: int, bias: bool = False, activation: nn.Module | None = None
    ) -> None:
        super().__init__()
        self.in_features, self.out_features, self.bias = in_features, out_features, bias
        self.activation = nn.Identity() if activation is None else activation
        self.linear = nn.Linear(in_features, out_features, bias=bias)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.activation(self.linear(tokens))
        return out

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "in_features": self.in_features,
            "out_features": self.out_features,
            "bias": self.bias,
            "activation_function": activation_name(self.activation),
            "module_input_name": "token_embeddings",
            "module_output_name": "token_embeddings",
        }

    def save(self, path: Path) -> None:
        from safetensors.torch import save_file

        path.mkdir(parents=True, exist_ok=True)
        write_json(path / "config.json", self.get_config_dict())
        state = {f"linear.{k}": v.detach().contiguous().cpu() for k, v in self.linear.state_dict().items()}
        save_file(state, str(path / "model.safetensors"))

    @classmethod
    def load(cls, path: Path, trust_remote_code: bool = False) -> TokenProjection:
        config = read_json(path / "config.json")
        if config.get("use_residual"):
            raise ModelLoadError(f"{path}: a Dense with use_residual is not supported")
        source = config.get("module_input_name", "token_embeddings")
        if source != "token_embeddings":
            raise ModelLoadError(f"{path}: a multi-vector Dense must read token_embeddings, not {source!r}")
        try:
            module = cls(
                int(config["in_features"]),
                int(config["out_features"]),
                bool(config.get("bias", True)),
                activation_from_name(config.get("activation_function"), trust_remote_code),
            )
        except KeyError as e:
            raise ModelLoadError(f"{path / 'config.json'}: missing {e.args[0]!r}") from None
        weights = path / "model.safetensors"
        if weights.exists():
            state = load_safetensors_state(weights)
        elif (path / "pytorch_model.bin").exists():
            state = torch.load(path / "pytorch_model.bin", map_location="cpu", weights_only=True)
        else:
            raise ModelLoadError(f"{path}: the Dense module has no model.safetensors")
        state = {k.removeprefix("linear."): v for k, v in state.items()}
        try:
            module.linear.load_state_dict(state)
        except RuntimeError as e:
            raise CorruptModelError(f"{path}: Dense weights do not match its config ({e})") from e
        return module
