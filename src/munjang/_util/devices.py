"""Device choice: the fastest accelerator present unless the caller names one."""

from __future__ import annotations

import torch


def best_device() -> str:
    """cuda if a GPU is visible, else mps on Apple silicon, else cpu."""
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def resolve_device(device: str | torch.device | None) -> torch.device:
    """Turn None/"auto" into the best device; validate an explicit one."""
    if device is None or device == "auto":
        return torch.device(best_device())
    try:
        return torch.device(device)
    except RuntimeError as e:
        raise ValueError(f"unknown device {device!r} (use cpu, cuda, cuda:N, mps or auto)") from e
