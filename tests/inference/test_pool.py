"""Encoding across worker processes, and the `munjang encode` options that pick backend, precision,
batching and processes."""

from __future__ import annotations

import numpy as np
import pytest

from munjang.encoders.dense.pool import EncodePool, EncoderProcess
from tests.helpers.cli import run_cli

TEXTS = [f"sentence number {i} about {'cats' if i % 2 else '날씨'}" + " word" * (i % 7) for i in range(40)]


def test_pool_rows_come_back_in_input_order_and_match_one_process(encoder):
    expected = encoder.encode(TEXTS)
    with EncodePool(None, processes=2, threads_per_process=1) as pool:
        assert pool.devices == ["cpu", "cpu"]
        got = pool.encode(TEXTS, chunk_size=7, normalize_embeddings=True)
        plain = pool.encode(TEXTS[:3])
        with pytest.raises(TypeError, match=r"sentences\[1\] is int"):
            pool.encode(["ok", 3])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="chunk_size"):
            pool.encode(TEXTS, chunk_size=0)
    norm = expected / np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(got, norm, atol=1e-5)
    np.testing.assert_allclose(plain, expected[:3], atol=1e-5)


def test_encoder_process_matches_in_process_and_restarts_after_a_crash(encoder):
    import os
    import signal

    ids, prompt_length = encoder.token_ids(TEXTS)
    expected = encoder.encode_tokenized(ids, prompt_length=prompt_length, truncate_dim=16)
    process = EncoderProcess(encoder.model_folder, threads=1)
    try:
        assert process.pid != os.getpid()
        got = process.encode_tokenized(ids, prompt_length=prompt_length, truncate_dim=16)
        np.testing.assert_allclose(got, expected, atol=1e-5)
        with pytest.raises(ValueError, match=r"input_ids\[0\]"):
            process.encode_tokenized({"input_ids": [[]]})  # the worker's error comes back as itself
        first = process.pid
        os.kill(first, signal.SIGKILL)
        with pytest.raises(RuntimeError, match="restarted"):
            process.encode_tokenized(ids)
        assert process.pid != first
        np.testing.assert_allclose(process.encode_tokenized(ids, truncate_dim=16), expected, atol=1e-5)
    finally:
        process.close()


def test_cli_encode_with_backend_precision_budget_and_processes(tmp_path, encoder, capsys, monkeypatch):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    code, _, err = run_cli(
        ["encode", str(src), "-o", str(tmp_path / "bf16.npy"), "--precision", "bf16", "--max-tokens", "64"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    bf16 = np.load(tmp_path / "bf16.npy")
    fp32 = encoder.encode(TEXTS)
    cos = (bf16 * fp32).sum(1) / np.linalg.norm(bf16, axis=1) / np.linalg.norm(fp32, axis=1)
    assert cos.min() > 0.999 and np.abs(bf16 - fp32).max() > 0  # really ran in bf16
    code, _, err = run_cli(
        ["encode", str(src), "-o", str(tmp_path / "pool.npy"), "--processes", "2", "--threads", "1"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    np.testing.assert_allclose(np.load(tmp_path / "pool.npy"), fp32, atol=1e-5)
    code, _, err = run_cli(["encode", str(src), "--backend", "tensorrt"], capsys, monkeypatch)
    assert code != 0 and "unknown backend 'tensorrt'" in err
