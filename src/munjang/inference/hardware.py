"""What the machine can do fast: bf16 matrix instructions on the CPU, half precision on GPUs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


def cpu_flags() -> frozenset[str]:
    """The CPU feature flags (from /proc/cpuinfo; empty where that is not available)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def cpu_has_fast_bf16() -> bool:
    """True when bf16 matmuls run on dedicated instructions (AMX or AVX-512 BF16), so they are
    several times faster than fp32 rather than emulated and slower."""
    flags = cpu_flags()
    return bool({"amx_bf16", "avx512_bf16"} & flags)


def best_precision(device: torch.device) -> str:
    """The fastest precision that keeps fp32 accuracy (cosine >= 0.999) on `device`."""
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if device.type == "cpu" and cpu_has_fast_bf16():
        return "bf16"
    return "fp32"


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run torch with `threads` intra-op threads for a while (None: leave it alone).

    Used around the pooling that follows an ONNX Runtime / OpenVINO call: torch's OpenMP workers
    spin after each tiny op and would take the cores from the runtime's own thread pool, cutting its
    throughput sharply. torch's setting is process-wide.
    """
    if threads is None or threads == torch.get_num_threads():
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
