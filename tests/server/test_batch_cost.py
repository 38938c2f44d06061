"""The batch cost fit behind admission by expected wait (server/batch_cost.py)."""

from __future__ import annotations

import math

import pytest

from munjang.server.batch_cost import BatchCost


def model(tokens: int) -> float:
    """A model whose batch costs 50 ms plus 0.5 ms a token."""
    return 0.05 + 0.0005 * tokens


def test_batches_of_several_sizes_give_the_fixed_and_per_token_parts() -> None:
    cost = BatchCost(batch_tokens=2048)
    for tokens in (800, 200, 100, 2048, 300, 50, 1200):
        cost.observe(tokens, model(tokens))
    assert cost.fixed == pytest.approx(0.05, rel=1e-6)
    assert cost.per_token == pytest.approx(0.0005, rel=1e-6)
    assert cost.tokens_per_s == pytest.approx(2048 / model(2048), rel=1e-6)
    # 5,000 tokens clear in three batches: three fixed parts, not one per small batch
    assert cost.seconds_for(5000) == pytest.approx(3 * 0.05 + 0.0005 * 5000, rel=1e-6)


def test_small_batches_after_refusals_do_not_make_a_full_queue_look_slow() -> None:
    """The gap a single tokens/s figure left (issue 75): after a burst of small batches the rate
    through the origin is half a full batch's, so admission refused work the model clears in
    time. The fit predicts a full batch within a few percent of its true time."""
    cost = BatchCost(batch_tokens=2048)
    for tokens in [2048, 1500] + [60, 40, 90, 30, 120, 50, 80, 45] * 3:
        cost.observe(tokens, model(tokens))
    ratio_estimate = sum(map(model, [60, 40, 90])) / 190 * 2048  # one rate from the last small batches
    assert cost.seconds_for(2048) == pytest.approx(model(2048), rel=0.02)
    assert ratio_estimate > 2 * model(2048)


def test_one_size_alone_is_all_per_token_and_refuses_on_the_safe_side() -> None:
    cost = BatchCost(batch_tokens=1000)
    assert cost.seconds_for(500) is None and cost.tokens_per_s is None
    for _ in range(3):
        cost.observe(200, model(200))
    assert cost.fixed == 0.0 and cost.per_token == pytest.approx(model(200) / 200)
    assert cost.seconds_for(1000) >= model(1000)  # never optimistic for a larger batch


def test_the_fit_follows_a_model_that_slows_down() -> None:
    cost = BatchCost(batch_tokens=2048)
    for tokens in (100, 2000, 500, 1000) * 3:
        cost.observe(tokens, model(tokens))
    for tokens in (100, 2000, 500, 1000) * 8:  # a busier machine: every batch takes twice as long
        cost.observe(tokens, 2 * model(tokens))
    assert cost.seconds_for(2048) == pytest.approx(2 * model(2048), rel=0.05)


def test_noise_that_would_give_a_negative_part_falls_back_to_the_rate() -> None:
    cost = BatchCost(batch_tokens=2048)
    cost.observe(100, 0.5)  # a small batch slower than a large one (a stall)
    cost.observe(2000, 0.2)
    keep = 1 - cost.weight  # the older batch counts a little less
    assert cost.fixed == 0.0 and cost.per_token == pytest.approx((keep * 0.5 + 0.2) / (keep * 100 + 2000))
    assert cost.seconds_for(0) == 0.0
    assert not math.isnan(cost.seconds_for(4096) or math.nan)


def test_arguments_are_checked() -> None:
    with pytest.raises(ValueError):
        BatchCost(batch_tokens=0)
    with pytest.raises(ValueError):
        BatchCost(batch_tokens=10, weight=0)
    cost = BatchCost(batch_tokens=10)
    cost.observe(0, 1.0)
    cost.observe(10, 0.0)
    assert cost.measured == 0 and cost.per_token is None
