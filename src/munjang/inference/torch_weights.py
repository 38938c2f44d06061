"""Torch's copy of a model's weights while a compiled graph (OpenVINO, ONNX Runtime) holds its own:
released, so a served model costs its weights once, and read back from the folder they were loaded
from when something needs torch again, checked against what was released.

One lifecycle for encoders (`encoders/dense/backend_selection.py`) and cross-encoders
(`encoders/cross/backends.py`), each holding a `TorchWeights`:

- `mark_from_folder(model)` when every weight in memory was just read from the model's folder; only
  while none changed since (`from_folder`: no in-place edit, optimizer step or move, `weights_state`)
  may they be released, since only then can the folder give them back;
- `release(model)` records each weight's name, shape, dtype and checksum (sum and norm, in float64),
  swaps it for an empty tensor and returns the memory to the system;
- `restore(model, read, source)` reads the weights back (`read(dtype)` gives name -> tensor, from the
  folder) and refuses any whose name, shape or checksum differs from the released one: a folder
  rewritten meanwhile is an error, not a silent change of model;
- `record(model)` / `changed_since(record, model)`: whether an optimizer changed the weights since
  something was built from them (the automatic choice, an exported graph). Weights read back hold
  the same values at new addresses, so a holder re-records what it keeps after `restore`.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Mapping

import torch
from torch import Tensor, nn

from .memory import release_freed_memory
from .weights_state import optimizer_generation, weights_state

Checksum = tuple[float, float]
# (optimizer generation, weights state): when something was built from the weights (`record`).
Record = tuple[int, tuple[tuple[int, int, int], ...]]
# The checksums of a weight read back and of the one released agree to this relative tolerance: the
# same values summed in another order (another device, thread count) differ in the last bits only.
CHECKSUM_TOLERANCE = 1e-9


def checksum(tensor: Tensor) -> Checksum:
    """A cheap fingerprint of a tensor's values: its sum and its norm, accumulated in float64."""
    data = tensor.detach()
    return float(data.sum(dtype=torch.float64)), float(torch.linalg.vector_norm(data, dtype=torch.float64))


def same_checksum(a: Checksum, b: Checksum) -> bool:
    tol = CHECKSUM_TOLERANCE
    return all(math.isclose(x, y, rel_tol=tol, abs_tol=tol) for x, y in zip(a, b, strict=True))


class TorchWeights:
    """Whether a model's torch weights are still its folder's, and their release and checked restore."""

    def __init__(self) -> None:
        # name -> (shape, dtype, checksum) of each weight while they are released
        self.released: dict[str, tuple[torch.Size, torch.dtype, Checksum]] | None = None
        self._folder_state: tuple[tuple[int, int, int], ...] | None = None  # weights_state when read

    @property
    def is_released(self) -> bool:
        return self.released is not None

    def released_count(self) -> int:
        """How many weights are released (counted at their shapes; 0 when none are)."""
        return sum(shape.numel() for shape, _, _ in (self.released or {}).values())

    def mark_from_folder(self, model: nn.Module) -> None:
        """Record that `model`'s weights in memory are exactly its folder's (just read from it)."""
        self._folder_state = weights_state(list(model.parameters()))

    def forget_folder(self) -> None:
        self._folder_state = None

    def from_folder(self, model: nn.Module) -> bool:
        """Whether the weights are still the folder's: released ones are, held ones when none changed."""
        if self.released is not None:
            return True
        return (
            self._folder_state is not None and weights_state(list(model.parameters())) == self._folder_state
        )

    def release(self, model: nn.Module) -> None:
        """Swap every weight of `model` for an empty tensor, recording what is needed to check the
        read-back. The caller has checked `from_folder` (otherwise nothing could give them back)."""
        self.released = {name: (p.shape, p.dtype, checksum(p)) for name, p in model.named_parameters()}
        for parameter in model.parameters():
            parameter.data = torch.empty(0, dtype=parameter.dtype)
        gc.collect()
        release_freed_memory()

    def restore(
        self, model: nn.Module, read: Callable[[torch.dtype], Mapping[str, Tensor]], source: object
    ) -> bool:
        """Put the released weights back into `model` from `read(dtype)` (name -> tensor, read from
        `source`, the folder), checked name by name against the released shapes and checksums. False
        (nothing done) when none are released."""
        released = self.released
        if released is None:
            return False
        dtype = next(iter(released.values()))[1]
        fresh = read(dtype)
        restored: dict[str, Tensor] = {}
        for name, _ in model.named_parameters():
            shape, kind, expected = released[name]
            found = fresh.get(name)
            if found is None or found.shape != shape or not same_checksum(checksum(found), expected):
                raise RuntimeError(f"{source} changed since its weights were released ({name})")
            restored[name] = found.data.to(kind)
        for name, parameter in model.named_parameters():  # all checked first: none or all come back
            parameter.data = restored[name]
        self.released = None
        self.mark_from_folder(model)
        return True

    def record(self, model: nn.Module) -> Record:
        """The weights as they are now, to ask `changed_since` later."""
        return optimizer_generation(), weights_state(list(model.parameters()))

    def changed_since(self, record: Record, model: nn.Module) -> tuple[bool, Record]:
        """Whether `model`'s weights changed since `record`, and the record to keep: moved on to the
        current generation when only other models were trained (a cheap check next time)."""
        generation, state = record
        now = optimizer_generation()
        if now == generation:
            return False, record
        if self.released is not None:  # released weights take no optimizer steps: another model's
            return False, (now, state)
        if weights_state(list(model.parameters())) != state:
            return True, record
        return False, (now, state)
