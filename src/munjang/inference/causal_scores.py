"""An LLM reranker's scores on OpenVINO: the decoder and the two output-head rows that `LogitScore`
reads, converted from the model in memory into one graph whose output is `(batch, 2)` logits at the last
position, not the `(batch, vocabulary)` row (151,936 columns for Qwen3) a generic export would give.

`openvino.convert_model` traces the module (no ONNX file, so no 2 GiB protobuf limit on a 0.6B model);
the graph is compiled for the CPU at f32 (pinned, or OpenVINO would switch to bf16 silently) or bf16
(bf16 matmuls with float accumulation, on CPUs with AVX-512 BF16 or AMX). It is built on first use, kept
with the model, and rebuilt when the weights change (`weights_state`: in-place edits and optimizer
steps). Every new graph is checked against torch on a probe batch before it is used.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from torch import nn

from .base import BackendError
from .weights_state import optimizer_generation, weights_state

PRECISIONS = ("fp32", "bf16")
# Largest |log-odds| difference to torch fp32 accepted on the probe batch, per precision.
PROBE_TOLERANCE = {"fp32": 1e-3, "bf16": 0.5}


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


@contextlib.contextmanager
def _eager_attention(model: Any) -> Iterator[None]:
    """Trace the attention as written, with its finite additive mask: torch's SDPA kernel, traced with
    a boolean mask, gives the left padding's fully masked rows NaN in OpenVINO, and a NaN value row
    spreads to every real token through probabilities of exactly 0."""
    config = model.config
    saved = config._attn_implementation
    config._attn_implementation = "eager"
    try:
        yield
    finally:
        config._attn_implementation = saved


class OpenVINOCausalScorer:
    """Scores batches of left-padded token ids with a compiled OpenVINO graph (thread-safe)."""

    def __init__(self, transformer: Any, precision: str = "fp32", threads: int | None = None) -> None:
        if precision not in PRECISIONS:
            raise ValueError(
                f"an LLM reranker runs on OpenVINO at {' or '.join(PRECISIONS)}, not {precision!r}"
            )
        if transformer.score_token_ids is None:
            raise BackendError("OpenVINO scoring needs the LogitScore token ids (a causal-LM cross-encoder)")
        self.transformer = transformer
        self.precision = precision
        self.threads = threads
        self._lock = threading.Lock()
        self._compiled: Any = None
        self._state: Any = None

    def _current_state(self) -> Any:
        return (weights_state(list(self.transformer.parameters())), optimizer_generation())

    def _build(self) -> Any:
        import openvino as ov

        lm = self.transformer.auto_model
        if next(lm.parameters()).dtype != torch.float32:
            raise BackendError("OpenVINO scoring converts a float32 model; load it with dtype=torch.float32")
        module = LastTokenLogits(lm, list(self.transformer.score_token_ids)).eval()
        probe = self.transformer.collate(
            {"input_ids": [[1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 12], [5, 4, 3, 2, 1, 2]]}, [0, 1, 2]
        )
        example = {"input_ids": probe["input_ids"], "attention_mask": probe["attention_mask"]}
        try:
            with torch.no_grad(), _eager_attention(lm):
                reference = module(**example).numpy()
                model = ov.convert_model(module, example_input=example)
        except Exception as e:  # the tracer's failures are many and varied; name the model
            raise BackendError(
                f"could not convert {type(lm).__name__} for OpenVINO ({type(e).__name__}: {e})"
            ) from e
        config: dict[str, Any] = {
            "INFERENCE_PRECISION_HINT": "bf16" if self.precision == "bf16" else "f32",
            "PERFORMANCE_HINT": "LATENCY",
        }
        if self.threads:
            config["INFERENCE_NUM_THREADS"] = int(self.threads)
        compiled = ov.Core().compile_model(model, "CPU", config)
        got = compiled({k: v.numpy() for k, v in example.items()})[0]
        diff = float(np.abs(np.asarray(got) - reference).max())
        if not diff <= PROBE_TOLERANCE[self.precision]:
            raise BackendError(f"the OpenVINO graph differs from torch by {diff:.3g} on the probe batch")
        return compiled

    def __call__(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """`(batch, 2)` float32 logits of the scored tokens at the last position."""
        with self._lock:
            state = self._current_state()
            if self._compiled is None or state != self._state:
                self._compiled = self._build()
                self._state = state
            compiled = self._compiled
        request = compiled.create_infer_request()
        inputs = {"input_ids": batch["input_ids"].numpy(), "attention_mask": batch["attention_mask"].numpy()}
        out = request.infer(inputs)
        return torch.from_numpy(np.array(next(iter(out.values())), dtype=np.float32))
