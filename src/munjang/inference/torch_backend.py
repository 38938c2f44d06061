"""The torch backends: a lean BERT-family forward pass for inference, and the Hugging Face model itself.

`LeanBertBackend` recomputes a BERT / RoBERTa / XLM-R encoder from the loaded weights with what
inference does not need taken out: one fused QKV matmul per layer, attention as two batched matmuls
for sentence-length inputs on the CPU and torch's fused kernel for longer ones and on CUDA
(`CPU_FUSED_ATTENTION_TOKENS`), the 1/sqrt(d) scale folded into the query weights, and — at
`bf16`/`fp16` — half-precision matmuls with a float32 residual stream and float32 LayerNorm, so the
result stays within ~1e-5 cosine of float32.

`HuggingFaceBackend` runs the model's own forward (under autocast for half precisions); it is the
fallback for architectures the lean path does not know.

Both read the live parameters: the lean path's fused weight copy is rebuilt whenever a parameter changed
in place, was stepped by an optimizer (fused ones included) or moved (`weights_state`).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .base import BackendError
from .weights_state import weights_state

HALF_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
LEAN_MODEL_TYPES = {"bert", "roberta", "xlm-roberta", "camembert"}
_ACTIVATIONS = {"gelu": "none", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh"}
# On the CPU, batches at least this many tokens wide take torch's fused attention kernel: much faster
# than two batched matmuls on long inputs, while on sentence-length ones the two matmuls are as fast or
# faster (bench/torch_attention.py; figures in docs/benchmarks.md). On CUDA every batch takes it.
CPU_FUSED_ATTENTION_TOKENS = 128
# RoBERTa-family position ids start after the padding index.
_OFFSET_POSITIONS = {"roberta", "xlm-roberta", "camembert"}


def compute_dtype(precision: str) -> torch.dtype:
    if precision == "fp32":
        return torch.float32
    if precision in HALF_DTYPES:
        return HALF_DTYPES[precision]
    raise BackendError(f"the torch backend runs fp32, bf16 or fp16, not {precision!r}")


def lean_unsupported_reason(model: Any) -> str | None:
    """Why the lean forward cannot reproduce this model (None: it can)."""
    config = model.config
    model_type = getattr(config, "model_type", "")
    if model_type not in LEAN_MODEL_TYPES:
        return f"model type {model_type!r} is not one of {sorted(LEAN_MODEL_TYPES)}"
    if getattr(config, "hidden_act", None) not in _ACTIVATIONS:
        return f"activation {getattr(config, 'hidden_act', None)!r}"
    if getattr(config, "position_embedding_type", "absolute") != "absolute":
        return "relative position embeddings"
    if getattr(config, "is_decoder", False) or getattr(config, "add_cross_attention", False):
        return "a decoder"
    if not (hasattr(model, "embeddings") and hasattr(model, "encoder") and hasattr(model.encoder, "layer")):
        return "not a BERT-style module tree"
    return None


def _fused_linear_gelu_works(approximate: str) -> bool:
    """Whether this torch build has oneDNN's linear + GELU kernel and it agrees with the two-op form."""
    op = getattr(torch.ops.mkldnn, "_linear_pointwise", None)
    if op is None or not torch.backends.mkldnn.is_available():
        return False
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4, 16, generator=generator).to(torch.bfloat16)
    w = torch.randn(8, 16, generator=generator).to(torch.bfloat16)
    b = torch.randn(8, generator=generator).to(torch.bfloat16)
    try:
        fused = op(x, w, b, "gelu", [], approximate).float()
    except RuntimeError:
        return False
    plain = F.gelu(F.linear(x.float(), w.float(), b.float()), approximate=approximate)
    return bool((fused - plain).abs().max() < 0.1)


class LeanBertBackend:
    """Inference-only forward pass of a BERT-family encoder (see the module docstring)."""

    name = "torch"

    def __init__(self, model: nn.Module, precision: str = "fp32") -> None:
        reason = lean_unsupported_reason(model)
        if reason is not None:
            raise BackendError(f"the lean torch path does not support this model: {reason}")
        self.model = model
        self.precision = precision
        self.dtype = compute_dtype(precision)
        config: Any = model.config
        self.heads = int(config.num_attention_heads)
        self.hidden = int(config.hidden_size)
        self.head_dim = self.hidden // self.heads
        self.eps = float(config.layer_norm_eps)
        self.gelu_approximate = _ACTIVATIONS[config.hidden_act]
        self.position_offset = int(config.pad_token_id) + 1 if config.model_type in _OFFSET_POSITIONS else 0
        self._params = [p for p in model.parameters()]
        self._fused_gelu = self.dtype == torch.bfloat16 and _fused_linear_gelu_works(self.gelu_approximate)
        self._key: tuple[Any, ...] | None = None
        self._layers: list[dict[str, torch.Tensor]] = []

    @property
    def device(self) -> torch.device:
        return self._params[0].device

    def _weights(self) -> list[dict[str, torch.Tensor]]:
        """Fused, pre-cast layer weights; rebuilt when a parameter changed or moved."""
        key = (self.device, *weights_state(self._params))
        if key == self._key:
            return self._layers
        dt = self.dtype
        scale = 1.0 / math.sqrt(self.head_dim)
        layers = []
        for layer in self.model.encoder.layer:  # type: ignore[union-attr]
            attention = layer.attention.self
            out = layer.attention.output
            layers.append(
                {
                    "wqkv": torch.cat(
                        [attention.query.weight * scale, attention.key.weight, attention.value.weight]
                    ).to(dt),
                    "bqkv": torch.cat(
                        [attention.query.bias * scale, attention.key.bias, attention.value.bias]
                    ).to(dt),
                    "wo": out.dense.weight.to(dt),
                    "bo": out.dense.bias.to(dt),
                    "ln1_w": out.LayerNorm.weight.float(),
                    "ln1_b": out.LayerNorm.bias.float(),
                    "w1": layer.intermediate.dense.weight.to(dt),
                    "b1": layer.intermediate.dense.bias.to(dt),
                    "w2": layer.output.dense.weight.to(dt),
                    "b2": layer.output.dense.bias.to(dt),
                    "ln2_w": layer.output.LayerNorm.weight.float(),
                    "ln2_b": layer.output.LayerNorm.bias.float(),
                }
            )
        self._layers = [{k: v.detach() for k, v in layer.items()} for layer in layers]
        self._key = key
        return self._layers

    @torch.inference_mode()
    def token_embeddings(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        layers = self._weights()
        input_ids = batch["input_ids"]
        mask = batch["attention_mask"].bool()
        rows, width = input_ids.shape
        emb: Any = self.model.embeddings
        positions = torch.arange(self.position_offset, self.position_offset + width, device=input_ids.device)
        x = emb.word_embeddings(input_ids) + emb.position_embeddings(positions)
        token_types = batch.get("token_type_ids")
        if token_types is not None:
            x = x + emb.token_type_embeddings(token_types)
        else:
            x = x + emb.token_type_embeddings.weight[0]
        norm = emb.LayerNorm
        x = F.layer_norm(x.float(), (self.hidden,), norm.weight.float(), norm.bias.float(), self.eps)
        additive: torch.Tensor | None = None
        if not bool(mask.all()):
            additive = torch.zeros(rows, 1, 1, width, device=x.device, dtype=self.dtype)
            additive.masked_fill_(~mask[:, None, None, :], float("-inf"))
        for weights in layers:
            x = self._layer(x, additive, weights)
        return x

    def _linear_gelu(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """GELU(x W^T + b): on CPU in bf16, one oneDNN call with GELU as a post-op (faster than
        the matmul followed by a separate bf16 GELU pass); elsewhere the plain two ops."""
        if self._fused_gelu and x.device.type == "cpu":
            fused: torch.Tensor = torch.ops.mkldnn._linear_pointwise(
                x, weight, bias, "gelu", [], self.gelu_approximate
            )
            return fused
        return F.gelu(F.linear(x, weight, bias), approximate=self.gelu_approximate)

    def _layer(
        self, x: torch.Tensor, additive: torch.Tensor | None, w: dict[str, torch.Tensor]
    ) -> torch.Tensor:
        rows, width, hidden = x.shape
        dt = self.dtype
        qkv = F.linear(x.to(dt), w["wqkv"], w["bqkv"]).view(rows, width, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        if x.is_cuda or width >= CPU_FUSED_ATTENTION_TOKENS:
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=additive, scale=1.0)
        else:
            scores = torch.matmul(q, k.transpose(-1, -2))
            if additive is not None:
                scores = scores + additive
            context = torch.matmul(scores.softmax(-1), v)
        context = context.transpose(1, 2).reshape(rows, width, hidden)
        x = x + F.linear(context, w["wo"], w["bo"]).float()
        x = F.layer_norm(x, (hidden,), w["ln1_w"], w["ln1_b"], self.eps)
        inner = self._linear_gelu(x.to(dt), w["w1"], w["b1"])
        x = x + F.linear(inner, w["w2"], w["b2"]).float()
        return F.layer_norm(x, (hidden,), w["ln2_w"], w["ln2_b"], self.eps)


class HuggingFaceBackend:
    """The model's own forward pass, under autocast for half precisions: works for any architecture."""

    name = "torch"

    def __init__(self, model: nn.Module, precision: str = "fp32") -> None:
        self.model = model
        self.precision = precision
        self.dtype = compute_dtype(precision)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @torch.inference_mode()
    def token_embeddings(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in batch}
        device = self.device
        if self.dtype == torch.float32:
            out = self.model(**inputs, return_dict=True)
        else:
            with torch.autocast(device.type, dtype=self.dtype):
                out = self.model(**inputs, return_dict=True)
        hidden: torch.Tensor = out.last_hidden_state
        return hidden.float()


def torch_backend(model: nn.Module, precision: str = "fp32", lean: bool | None = None) -> Any:
    """The lean path where it reproduces the model (or `lean=True` demands it), else Hugging Face's."""
    compute_dtype(precision)
    if lean is False or (lean is None and lean_unsupported_reason(model) is not None):
        return HuggingFaceBackend(model, precision)
    return LeanBertBackend(model, precision)
