"""Every encoder kind's package is shaped alike: it exports its model class and its loader (or the
class that loads itself), and importing it loads no torch until one of those names is used."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

KINDS = {
    "dense": ["SentenceEncoder", "load_encoder"],
    "sparse": ["SparseEncoder", "load_sparse_encoder"],
    "m3": ["M3Encoder", "load_m3_encoder"],
    "multi_vector": ["MultiVectorEncoder", "load_multi_vector_encoder"],
    "cross": ["CrossEncoder", "load_cross_encoder"],
    "remote": ["RemoteEncoder"],
    "static": ["StaticQueryEncoder"],
}
# multi_vector's package imports torch itself (its maxsim function, which shares its submodule's name).
LIGHT = ["dense", "sparse", "m3", "cross", "remote", "static"]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_exports_its_model_and_loader(kind: str) -> None:
    import importlib

    package = importlib.import_module(f"munjang.encoders.{kind}")
    for name in KINDS[kind]:
        assert name in package.__all__ and name in dir(package)
        value = getattr(package, name)
        assert callable(value) and value.__module__.startswith(f"munjang.encoders.{kind}.")
    if kind != "cross":  # a cross-encoder scores pairs; every other kind encodes both sides
        model = getattr(package, KINDS[kind][0])
        assert hasattr(model, "encode_query") and hasattr(model, "encode_document")


def test_importing_a_kind_loads_no_torch() -> None:
    code = (
        "import json, sys\n"
        f"import {', '.join(f'munjang.encoders.{k}' for k in LIGHT)}\n"
        "light = 'torch' in sys.modules\n"
        "from munjang.encoders.remote import is_remote_name\n"
        "print(json.dumps([light, 'torch' in sys.modules, is_remote_name('openai:x')]))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout) == [False, False, True]
