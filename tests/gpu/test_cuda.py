"""The CUDA paths, run on a GPU: encoding at fp32 against the CPU and sentence-transformers, the
automatic choice and the half precisions, exact resume of mixed-precision training, the encode
pool's GPU workers and the cross-encoder.

Marked `gpu` and left out of the default run (`make test-gpu` runs them). `MUNJANG_GPU_DEVICE=cpu`
runs the same assertions on the CPU, which checks the tests themselves on a machine without a GPU.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

import munjang
from munjang.inference.autotune import candidates
from munjang.losses import CosineSimilarityLoss
from munjang.training import Trainer, TrainingArguments
from tests.helpers.training import pair_examples, tiny_bert, weights
from tests.inference.test_autotune import assert_choice_meets_the_bar, cosines

pytestmark = pytest.mark.gpu

DEVICE = os.environ.get("MUNJANG_GPU_DEVICE", "cuda")


@pytest.fixture(autouse=True)
def a_gpu() -> None:
    if DEVICE.startswith("cuda") and not torch.cuda.is_available():
        pytest.fail("the gpu tests need a CUDA GPU (or MUNJANG_GPU_DEVICE=cpu)", pytrace=False)


SHORT = ["A man is playing a guitar.", "서울은 대한민국의 수도이다.", "The cat sat on the mat.", "비가 온다"]
# Long enough to take the fused attention kernel (and to be cut at the window).
LONG = [" ".join(f"word{i} 문장 {i}" for i in range(n)) for n in (60, 150, 400)]
TEXTS = SHORT * 8 + LONG


def test_fp32_on_the_gpu_matches_the_cpu(minilm_path: Path) -> None:
    cpu = munjang.load_encoder(minilm_path, device="cpu").encode(TEXTS, precision="fp32")
    gpu_encoder = munjang.load_encoder(minilm_path, device=DEVICE)
    assert gpu_encoder.device.type == torch.device(DEVICE).type
    gpu = gpu_encoder.encode(TEXTS, precision="fp32")
    assert gpu.dtype == np.float32 and gpu.shape == cpu.shape
    np.testing.assert_allclose(gpu, cpu, atol=2e-5)


def test_fp32_on_the_gpu_matches_sentence_transformers(minilm_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    ours = munjang.load_encoder(minilm_path, device=DEVICE).encode(TEXTS, precision="fp32", batch_size=8)
    theirs = SentenceTransformer(str(minilm_path), device=DEVICE).encode(TEXTS, batch_size=8)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_half_precisions_stay_within_the_int8_bar(minilm_path: Path) -> None:
    encoder = munjang.load_encoder(minilm_path, device=DEVICE)
    exact = encoder.encode(TEXTS, precision="fp32")
    for precision in ("bf16", "fp16") if DEVICE != "cpu" else ("bf16",):
        half = encoder.encode(TEXTS, backend="torch", precision=precision)
        assert half.dtype == np.float32
        cos = cosines(half, exact)
        assert cos.mean() >= 0.999 and cos.min() >= 0.99, (precision, cos.mean(), cos.min())


def test_the_automatic_choice_on_the_gpu_meets_the_fp32_bar(auto_cache, minilm_path: Path) -> None:
    encoder = munjang.load_encoder(minilm_path, device=DEVICE)
    assert_choice_meets_the_bar(encoder)
    choice = encoder.auto_choice()
    assert [(t.backend, t.precision) for t in choice.trials] == candidates(torch.device(DEVICE))
    assert encoder.info()["chosen_by"]["backend"] == choice.backend
    if DEVICE != "cpu":  # torch's precisions only, and a choice kept for this GPU model alone
        assert {t.backend for t in choice.trials} == {"torch"}
        assert choice.machine["gpu"] == torch.cuda.get_device_name(torch.device(DEVICE))


def _train(folder: Path, out: Path, resume: bool = False, on_step=None) -> munjang.SentenceEncoder:
    encoder = munjang.load_encoder(folder, device=DEVICE)
    args = TrainingArguments(
        output_dir=str(out), epochs=2, batch_size=4, learning_rate=1e-3, show_progress_bar=False,
        logging_steps=1, seed=7, mixed_precision="auto",
    )  # fmt: skip
    trainer = Trainer(encoder, CosineSimilarityLoss(encoder), pair_examples(30), args=args, on_step=on_step)
    summary = trainer.train(resume_from_checkpoint=resume)
    if resume:
        assert summary["global_step"] == 16
    return encoder


def test_mixed_precision_training_resumes_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dropout on, mixed precision as `auto` picks it on this device: an interrupted run resumed from
    its checkpoint (weights, optimizer, scheduler, the CPU's and every GPU's RNG) ends where an
    uninterrupted one does."""
    from munjang.training.trainer import resolve_mixed_precision

    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    try:
        folder = tiny_bert(tmp_path / "tiny", dropout=0.1)
        mixed = resolve_mixed_precision("auto", torch.device(DEVICE))
        if DEVICE != "cpu":
            assert mixed in ("bf16", "fp16")
        straight = _train(folder, tmp_path / "a")

        def stop_at_11(step: int, loss: float) -> None:
            if step == 11:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            _train(folder, tmp_path / "b", on_step=stop_at_11)
        checkpoint = tmp_path / "b" / "checkpoints" / "checkpoint-11"
        assert checkpoint.is_dir()
        from safetensors.torch import load_file

        assert ("cuda.0" in load_file(str(checkpoint / "rng.safetensors"))) == (DEVICE != "cpu")
        resumed = _train(folder, tmp_path / "b", resume=True)
        a, b = weights(straight), weights(resumed)
        moved = weights(munjang.load_encoder(folder, device="cpu"))
        assert any(not torch.equal(moved[k], a[k]) for k in a)
        for name in a:
            torch.testing.assert_close(b[name], a[name], rtol=0, atol=1e-6, msg=name)
    finally:
        torch.use_deterministic_algorithms(False)


def test_the_encode_pool_runs_a_worker_per_gpu(minilm_path: Path) -> None:
    from munjang.encoders.dense.pool import EncodePool

    expected = munjang.load_encoder(minilm_path, device=DEVICE).encode(TEXTS, precision="fp32")
    with EncodePool(minilm_path, devices=[DEVICE], precision="fp32") as pool:
        got = pool.encode(TEXTS, chunk_size=7)
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_the_cross_encoder_scores_on_the_gpu(tmp_path: Path) -> None:
    folder = tiny_bert(tmp_path / "tiny", dropout=0.0)
    pairs = [(a, b) for a in SHORT for b in SHORT]
    torch.manual_seed(0)  # the same new head in both
    cpu = munjang.load_cross_encoder(folder, device="cpu").predict(pairs)
    torch.manual_seed(0)
    gpu = munjang.load_cross_encoder(folder, device=DEVICE).predict(pairs)
    np.testing.assert_allclose(np.asarray(gpu), np.asarray(cpu), atol=1e-5)
