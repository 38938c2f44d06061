"""usearch (which links its own libstdc++) and onnxruntime in one process, in the order that killed
it: an HNSW search first, then the ONNX runtime (`munjang.search.index.native`)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_onnxruntime_loads_after_an_hnsw_index_in_the_same_process() -> None:
    pytest.importorskip("onnxruntime")
    code = (
        "import numpy as np\n"
        "from munjang.search.index.ann import HNSWIndex\n"
        "index = HNSWIndex(8)\n"
        "index.add(np.arange(3), np.eye(3, 8, dtype=np.float32))\n"
        "import onnxruntime\n"
        "print(index.search(np.eye(1, 8, dtype=np.float32), 1)[0][0][0], onnxruntime.get_device())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "CPU"]
