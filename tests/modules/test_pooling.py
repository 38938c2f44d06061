"""Pooling on the seeds' worked example, by hand; padding never leaks; configs round-trip."""

from __future__ import annotations

import pytest
import torch

from munjang.modules import POOLING_MODES, Pooling, pool
from munjang.modules.pooling import normalize_modes

# One sentence, 6 tokens x 2 dims, mask all ones (the seeds' example).
TOKENS = torch.tensor(
    [[0.15, -0.62], [-0.63, 0.07], [0.17, -0.62], [0.47, -0.34], [0.49, 0.00], [0.15, -0.62]]
)


def _hand(mode: str, rows: list[list[float]]) -> list[float]:
    n = len(rows)
    cols = list(zip(*rows, strict=True))
    if mode == "cls":
        return rows[0]
    if mode == "lasttoken":
        return rows[-1]
    if mode == "max":
        return [max(c) for c in cols]
    if mode == "mean":
        return [sum(c) / n for c in cols]
    if mode == "mean_sqrt_len_tokens":
        return [sum(c) / n**0.5 for c in cols]
    if mode == "weightedmean":
        w = list(range(1, n + 1))
        return [sum(wi * x for wi, x in zip(w, c, strict=True)) / sum(w) for c in cols]
    raise AssertionError(mode)


def test_worked_example_values() -> None:
    mask = torch.ones(1, 6, dtype=torch.long)
    emb = TOKENS.unsqueeze(0)
    assert pool(emb, mask, ["cls"]).tolist()[0] == pytest.approx([0.15, -0.62])
    # By hand: mean = (0.80 / 6, -2.13 / 6), max = (0.49, 0.07).
    assert pool(emb, mask, ["mean"]).tolist()[0] == pytest.approx([0.80 / 6, -0.355], abs=1e-6)
    assert pool(emb, mask, ["max"]).tolist()[0] == pytest.approx([0.49, 0.07], abs=1e-6)


@pytest.mark.parametrize("mode", POOLING_MODES)
def test_each_mode_matches_hand_computation(mode: str) -> None:
    out = pool(TOKENS.unsqueeze(0), torch.ones(1, 6, dtype=torch.long), [mode])
    assert out.tolist()[0] == pytest.approx(_hand(mode, TOKENS.tolist()), abs=1e-6)


@pytest.mark.parametrize("mode", POOLING_MODES)
def test_padding_inside_a_batch_changes_nothing(mode: str) -> None:
    """The example padded to 9 tokens next to a longer sentence pools exactly as alone."""
    alone = pool(TOKENS.unsqueeze(0), torch.ones(1, 6, dtype=torch.long), [mode])[0]
    other = torch.randn(9, 2)
    # Padding positions hold large values: any leak into mean/max/last would show.
    padded = torch.cat([TOKENS, torch.full((3, 2), 100.0)])
    batch = torch.stack([other, padded])
    mask = torch.tensor([[1] * 9, [1] * 6 + [0] * 3])
    together = pool(batch, mask, [mode])
    # Equal up to float summation order (a reduction over 9 slots instead of 6).
    torch.testing.assert_close(together[1], alone, rtol=0, atol=1e-6)


def test_all_three_modes_concatenate_in_canonical_order() -> None:
    mask = torch.ones(1, 6, dtype=torch.long)
    out = pool(TOKENS.unsqueeze(0), mask, normalize_modes("mean+max+cls"))[0].tolist()
    expected = _hand("cls", TOKENS.tolist()) + _hand("max", TOKENS.tolist()) + _hand("mean", TOKENS.tolist())
    assert out == pytest.approx(expected, abs=1e-6)
    module = Pooling(2, ["mean", "max", "cls"])
    assert module.output_dimension == 6
    assert module.modes == ("cls", "max", "mean")


def test_prompt_tokens_are_left_out_when_asked() -> None:
    mask = torch.ones(1, 6, dtype=torch.long)
    out = pool(TOKENS.unsqueeze(0), mask, ["mean"], prompt_length=2)[0].tolist()
    assert out == pytest.approx(_hand("mean", TOKENS.tolist()[2:]), abs=1e-6)


def test_half_precision_accumulates_in_float32() -> None:
    emb = torch.full((1, 4096, 2), 1.5, dtype=torch.float16)
    out = pool(emb, torch.ones(1, 4096, dtype=torch.long), ["mean"])
    assert out.dtype == torch.float16
    assert out.float().tolist()[0] == pytest.approx([1.5, 1.5])


def test_config_round_trip_both_formats(tmp_path) -> None:
    module = Pooling(384, "cls+mean+max", include_prompt=False)
    module.save(tmp_path)
    again = Pooling.load(tmp_path)
    assert again.modes == module.modes and again.include_prompt is False
    assert again.embedding_dimension == 384
    newer = Pooling.from_config(
        {"embedding_dimension": 8, "pooling_mode": ["max", "mean"], "include_prompt": True}
    )
    assert newer.modes == ("max", "mean") and newer.output_dimension == 16


@pytest.mark.parametrize("bad", ["median", "", "mean+sum"])
def test_unknown_mode_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match="pooling mode"):
        Pooling(4, bad)
