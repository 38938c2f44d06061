"""The contract every inference backend meets, and the names callers use to pick one."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol, TypeVar, runtime_checkable

import torch

from ..errors import MunjangError

# backend name -> precisions it offers
BACKENDS: dict[str, tuple[str, ...]] = {
    "torch": ("fp32", "bf16", "fp16"),
    "onnx": ("fp32", "int8"),
    "openvino": ("fp32", "bf16", "int8"),
}
PRECISIONS = ("fp32", "bf16", "fp16", "int8")


class BackendError(MunjangError):
    """A backend cannot run here (package missing, unsupported model or precision, failed export)."""


@runtime_checkable
class TokenBackend(Protocol):
    """Turns a padded batch into contextual token vectors.

    `batch` holds int64 tensors `input_ids`, `attention_mask` (1 = real token) and, when the model
    uses them, `token_type_ids`, all shaped (batch, seq). The result is float32 (batch, seq, hidden)
    on `self.device`; values at padded positions are unspecified (pooling masks them out).
    """

    name: str
    precision: str

    @property
    def device(self) -> torch.device: ...

    def token_embeddings(self, batch: dict[str, torch.Tensor]) -> torch.Tensor: ...


Batch = dict[str, torch.Tensor]
K = TypeVar("K")


@runtime_checkable
class PipelinedBackend(TokenBackend, Protocol):
    """A backend that runs several batches at once (OpenVINO's throughput streams): given a stream of
    (key, batch) it yields (key, batch, token vectors) in the same order, computing ahead."""

    def token_embeddings_many(
        self, items: Iterable[tuple[K, Batch]]
    ) -> Iterator[tuple[K, Batch, torch.Tensor]]: ...


def map_token_embeddings(
    runner: TokenBackend, items: Iterable[tuple[K, Batch]]
) -> Iterator[tuple[K, Batch, torch.Tensor]]:
    """(key, batch, token vectors) for each (key, batch), in order: pipelined where the backend can."""
    if isinstance(runner, PipelinedBackend):
        yield from runner.token_embeddings_many(items)
        return
    for key, batch in items:
        yield key, batch, runner.token_embeddings(batch)


def onnxruntime_module() -> Any:
    """Import onnxruntime, or say how to install it."""
    try:
        import onnxruntime
    except ImportError as e:
        raise BackendError(
            "the onnx backend needs onnxruntime (pip install onnxruntime, or onnxruntime-gpu)"
        ) from e
    return onnxruntime
