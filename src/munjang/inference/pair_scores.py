"""A cross-encoder's scores on OpenVINO: the model in memory traced into one graph, token ids in, the
`scores` out, compiled for the CPU at f32 (pinned, or OpenVINO would switch to bf16 silently) or bf16
(bf16 matmuls with float accumulation, on CPUs with AVX-512 BF16 or AMX).

`OpenVINOScorer` holds what every such graph needs: `openvino.convert_model` on the module (no ONNX
file, so no 2 GiB protobuf limit), a check against torch on a probe batch before a graph is used, a
rebuild when the weights change (`weights_state`: in-place edits and optimizer steps) unless the
weights are released (`hold`), thread-safe calls. `OpenVINOPairScorer` traces a BERT-style
cross-encoder's whole pipeline (transformer and head); `causal_scores.OpenVINOCausalScorer` an LLM
reranker's decoder and two head rows.
"""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from .base import BackendError
from .weights_state import optimizer_generation, weights_state

PRECISIONS = ("fp32", "bf16")
# Largest |score| difference to torch fp32 accepted on the probe batch, per precision.
PROBE_TOLERANCE = {"fp32": 1e-3, "bf16": 0.5}


@contextlib.contextmanager
def eager_attention(model: Any) -> Iterator[None]:
    """Trace the attention as written, with its finite additive mask: torch's SDPA kernel, traced with
    a boolean mask, gives fully masked rows (an LLM's left padding) NaN in OpenVINO, and a NaN value
    row spreads to every real token through probabilities of exactly 0."""
    config = model.config
    saved = config._attn_implementation
    config._attn_implementation = "eager"
    try:
        yield
    finally:
        config._attn_implementation = saved


class OpenVINOScorer(ABC):
    """A compiled OpenVINO graph of a scoring module, built on first use and checked against torch."""

    input_names: tuple[str, ...] = ("input_ids", "attention_mask")

    def __init__(self, precision: str = "fp32", threads: int | None = None) -> None:
        if precision not in PRECISIONS:
            raise ValueError(
                f"a cross-encoder runs on OpenVINO at {' or '.join(PRECISIONS)}, not {precision!r}"
            )
        self.precision = precision
        self.threads = threads
        self.hold = False  # True while torch's weights are released: nothing can change them
        self._lock = threading.Lock()
        self._compiled: Any = None
        self._state: Any = None

    @abstractmethod
    def parameters(self) -> list[torch.Tensor]:
        """The torch weights the graph copies (their changes trigger a rebuild)."""

    @abstractmethod
    def module(self) -> tuple[nn.Module, Any]:
        """The module to trace, and the Hugging Face model whose attention is traced eagerly."""

    @abstractmethod
    def probe(self) -> dict[str, torch.Tensor]:
        """A small padded batch of the model's inputs."""

    @property
    def built(self) -> bool:
        return self._compiled is not None

    def _current_state(self) -> Any:
        return (weights_state(self.parameters()), optimizer_generation())

    def _build(self) -> Any:
        import openvino as ov

        module, hf_model = self.module()
        if next(hf_model.parameters()).dtype != torch.float32:
            raise BackendError("OpenVINO scoring converts a float32 model; load it with dtype=torch.float32")
        probe = self.probe()
        example = {k: probe[k] for k in self.input_names if k in probe}
        try:
            with torch.no_grad(), eager_attention(hf_model):
                reference = module(**example).numpy()
                model = ov.convert_model(module.eval(), example_input=example)
        except Exception as e:  # the tracer's failures are many and varied; name the model
            raise BackendError(
                f"could not convert {type(hf_model).__name__} for OpenVINO ({type(e).__name__}: {e})"
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

    def build(self) -> None:
        """Compile now (or again, when the weights changed since): the weights must be present."""
        with self._lock:
            if self.hold and self._compiled is not None:
                return
            state = self._current_state()
            if self._compiled is None or state != self._state:
                self._compiled = self._build()
                self._state = state

    def rebase(self) -> None:
        """Take the weights' current state as the built one (they were read back with the same values)."""
        with self._lock:
            if self._compiled is not None:
                self._state = self._current_state()

    def __call__(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The graph's float32 output for one padded batch."""
        self.build()
        request = self._compiled.create_infer_request()
        out = request.infer({k: batch[k].numpy() for k in self.input_names if k in batch})
        return torch.from_numpy(np.array(next(iter(out.values())), dtype=np.float32))


class PipelineScores(nn.Module):
    """A cross-encoder's modules as one traceable function: token ids -> (batch, num_labels) scores."""

    def __init__(self, modules: Sequence[nn.Module]) -> None:
        super().__init__()
        self.stages = nn.ModuleList(modules)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        features: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            features["token_type_ids"] = token_type_ids
        for stage in self.stages:
            features = stage(features)
        scores: torch.Tensor = features["scores"]
        return scores.float()


class OpenVINOPairScorer(OpenVINOScorer):
    """A BERT-style cross-encoder (the checkpoint's classification head, or the SBERT head) on OpenVINO.
    `probe_batch` is a padded batch of pairs as the model tokenizes them (it says which inputs it takes)."""

    def __init__(
        self,
        modules: Sequence[nn.Module],
        hf_model: Any,
        probe_batch: dict[str, torch.Tensor],
        precision: str = "fp32",
        threads: int | None = None,
    ) -> None:
        super().__init__(precision, threads)
        self.modules = list(modules)
        self.hf_model = hf_model
        self.probe_batch = probe_batch
        names = ("input_ids", "attention_mask", "token_type_ids")
        self.input_names = tuple(n for n in names if n in probe_batch)

    def parameters(self) -> list[torch.Tensor]:
        return [p for m in self.modules for p in m.parameters()]

    def module(self) -> tuple[nn.Module, Any]:
        return PipelineScores(self.modules).eval(), self.hf_model

    def probe(self) -> dict[str, torch.Tensor]:
        return self.probe_batch
