"""What the machine's matrix multiply reaches, and what a model costs per token: the ceiling a backend is
measured against.

`gemm_peaks` times square matrix products on torch's threads: fp32 and bf16 (the faster of `torch.mm`
and oneDNN) and int8 (`torch._int_mm`, int8 x int8 -> int32, the VNNI / AMX path), best of a few calls,
in GFLOP/s (GOP/s for int8). `flops_per_token` counts a BERT-style encoder's multiply-adds for one
token of a sequence of `seq` tokens: 2 x the linear weights of every layer, plus attention's QK^T and AV
(4 x seq x hidden per layer). sentences/s x tokens per sentence x flops_per_token / peak is the
fraction of the peak reached.

    python bench/hardware_peaks.py        # print the peaks of this machine
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

SIZE = 2048
CALLS = 5


def _best_seconds(fn: Any, calls: int = CALLS) -> float:
    fn()  # kernels chosen, memory touched
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def gemm_peaks(size: int = SIZE) -> dict[str, float]:
    """GFLOP/s of fp32, bf16 and int8 square matrix products of `size` on torch's threads: for fp32 and
    bf16 the faster of `torch.mm` (MKL on x86 for fp32) and oneDNN's linear (which OpenVINO also uses;
    MKL runs well below it on AMD CPUs), for int8 `torch._int_mm`."""
    torch.manual_seed(0)
    ops = 2.0 * size**3
    peaks: dict[str, float] = {"threads": float(torch.get_num_threads())}
    a, b = torch.randn(size, size), torch.randn(size, size)
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        x, w = a.to(dtype), b.to(dtype)
        seconds = _best_seconds(lambda x=x, w=w: torch.mm(x, w))
        with contextlib.suppress(RuntimeError):  # a torch build without oneDNN
            xm, wm = x.to_mkldnn(), w.to_mkldnn()
            onednn = _best_seconds(lambda xm=xm, wm=wm: torch._C._nn.mkldnn_linear(xm, wm, None))
            seconds = min(seconds, onednn)
        peaks[name] = ops / seconds / 1e9
    a8 = torch.randint(-128, 127, (size, size), dtype=torch.int8)
    b8 = torch.randint(-128, 127, (size, size), dtype=torch.int8)
    with contextlib.suppress(RuntimeError):  # no int8 GEMM kernel for this CPU / build
        peaks["int8"] = ops / _best_seconds(lambda: torch._int_mm(a8, b8)) / 1e9
    return {k: round(v, 1) for k, v in peaks.items()}


def flops_per_token(model_folder: str | Path, seq: float) -> float:
    """Multiply-adds x 2 for one token of a `seq`-token input through the model's encoder layers."""
    config = json.loads((Path(model_folder) / "config.json").read_text(encoding="utf-8"))
    hidden, layers = config["hidden_size"], config["num_hidden_layers"]
    inner = config.get("intermediate_size", 4 * hidden)
    linear = 4 * hidden * hidden + 2 * hidden * inner  # Q, K, V, output; the two feed-forward matrices
    return float(layers * (2 * linear + 4 * seq * hidden))


def peak_fraction(
    sentences_per_s: float, tokens_per_sentence: float, flops: float, peak_gflops: float
) -> float:
    """The share of the GEMM peak that a throughput amounts to."""
    return sentences_per_s * tokens_per_sentence * flops / (peak_gflops * 1e9)


if __name__ == "__main__":
    print(json.dumps(gemm_peaks(), indent=2))
    sys.exit(0)
