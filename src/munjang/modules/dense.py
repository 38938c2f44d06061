"""Dense: a linear projection of the sentence vector, y = act(W x + b).

Used by models that map the pooled vector to another size (LaBSE, some distilled students).
Weights are stored as `model.safetensors` with keys `linear.weight` / `linear.bias`, as
sentence-transformers writes them.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from ..errors import CorruptModelError, ModelLoadError
from .base import Features, Module, load_safetensors_state, read_json, write_json

# Activations a config may name without trust_remote_code: plain torch classes, no arbitrary import.
_SAFE_ACTIVATIONS: dict[str, type[nn.Module]] = {
    f"torch.nn.modules.activation.{name}": getattr(nn, name)
    for name in ("Tanh", "ReLU", "GELU", "Sigmoid", "SiLU", "LeakyReLU", "ELU", "Softplus", "Hardtanh")
}
_SAFE_ACTIVATIONS["torch.nn.modules.linear.Identity"] = nn.Identity


def activation_name(activation: nn.Module) -> str:
    cls = type(activation)
    return f"{cls.__module__}.{cls.__qualname__}"


def activation_from_name(name: str | None, trust_remote_code: bool) -> nn.Module:
    if name is None:
        return nn.Identity()
    if name in _SAFE_ACTIVATIONS:
        return _SAFE_ACTIVATIONS[name]()
    if not trust_remote_code:
        raise ModelLoadError(
            f"Dense activation {name!r} is not a known torch activation; "
            "pass trust_remote_code=True to import it anyway"
        )
    module_name, _, class_name = name.rpartition(".")
    activation: nn.Module = getattr(importlib.import_module(module_name), class_name)()
    return activation


class Dense(Module):
    """Linear layer plus activation on `sentence_embedding` (Tanh by default, as in sentence-transformers).

    `output_name` is the feature it writes: `sentence_embedding`, or `scores` for the last layer of a
    cross-encoder head (sentence-transformers >= 6 calls it `module_output_name`).
    """

    st_type: ClassVar[str] = "sentence_transformers.models.Dense"
    folder_name: ClassVar[str] = "2_Dense"

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        activation: nn.Module | None = None,
        output_name: str = "sentence_embedding",
    ) -> None:
        super().__init__()
        if output_name not in ("sentence_embedding", "scores"):
            raise ValueError(
                f"Dense output_name must be 'sentence_embedding' or 'scores', not {output_name!r}"
            )
        self.output_name = output_name
        self.in_features = in_features
        self.out_features = out_features
        self.bias = bias
        self.activation = nn.Tanh() if activation is None else activation
        self.linear = nn.Linear(in_features, out_features, bias=bias)

    @property
    def output_dimension(self) -> int:
        return self.out_features

    def forward(self, features: Features) -> Features:
        features[self.output_name] = self.activation(self.linear(features["sentence_embedding"]))
        return features

    def get_config_dict(self) -> dict[str, Any]:
        config: dict[str, Any] = {
            "in_features": self.in_features,
            "out_features": self.out_features,
            "bias": self.bias,
            "activation_function": activation_name(self.activation),
        }
        if self.output_name != "sentence_embedding":  # classic readers do not know these keys
            config["module_input_name"] = "sentence_embedding"
            config["module_output_name"] = self.output_name
        return config

    def save(self, path: str | Path) -> None:
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        write_json(path / "config.json", self.get_config_dict())
        state = {f"linear.{k}": v.detach().contiguous().cpu() for k, v in self.linear.state_dict().items()}
        save_file(state, str(path / "model.safetensors"))

    @classmethod
    def load(cls, path: str | Path, trust_remote_code: bool = False, **kwargs: Any) -> Dense:
        path = Path(path)
        config = read_json(path / "config.json")
        activation = activation_from_name(config.get("activation_function"), trust_remote_code)
        source = config.get("module_input_name", "sentence_embedding")
        output = config.get("module_output_name") or "sentence_embedding"
        if source != "sentence_embedding" or output not in ("sentence_embedding", "scores"):
            raise ModelLoadError(
                f"{path}: Dense reads {source!r} and writes {output!r}; munjang supports "
                "sentence_embedding -> sentence_embedding or scores"
            )
        module = cls(
            int(config["in_features"]),
            int(config["out_features"]),
            bool(config.get("bias", True)),
            activation,
            output,
        )
        weights = path / "model.safetensors"
        if weights.exists():
            state = load_safetensors_state(weights)
        elif (path / "pytorch_model.bin").exists():
            # Restricted unpickler: tensors only, no code execution.
            state = torch.load(path / "pytorch_model.bin", map_location="cpu", weights_only=True)
        else:
            raise ModelLoadError(f"{path}: Dense module has no model.safetensors")
        state = {k.removeprefix("linear."): v for k, v in state.items()}
        try:
            module.linear.load_state_dict(state)
        except RuntimeError as e:
            raise CorruptModelError(f"{path}: Dense weights do not match its config ({e})") from e
        return module

    def extra_repr(self) -> str:
        out = f", output={self.output_name}" if self.output_name != "sentence_embedding" else ""
        return f"{self.in_features} -> {self.out_features}, activation={type(self.activation).__name__}{out}"
