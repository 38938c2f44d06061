"""What a batch of a model costs: a fixed part (a forward pass, thread hand-offs, pooling) plus a
part per token, fitted from the batches it ran.

One tokens-per-second figure misjudges a queue: a small batch pays the fixed part over few tokens,
so after a burst of small batches (what a queue holding few requests gives) the rate looks low and
admission refuses work the model would clear in time. Fitting `seconds = fixed + per_token * tokens`
over recent batches of different sizes, and draining a queue in full batches, predicts both the
small and the large ones. The fit is weighted least squares with exponential forgetting (`weight`
per batch), so a model that speeds up (its automatic backend chosen) or slows down (a busier
machine) is followed within a few batches. Until two different sizes are seen, the cost is the
measured rate through the origin: all of it per token, which errs on the side of refusing.
"""

from __future__ import annotations

import math


class BatchCost:
    """A model's batch time as `fixed + per_token * tokens`, fitted on the batches it ran."""

    def __init__(self, batch_tokens: int, weight: float = 0.3) -> None:
        """`batch_tokens`: the tokens a full batch holds (the batcher's budget); `weight`: how far each
        batch moves the fit (older batches count `(1 - weight) ** age`)."""
        if batch_tokens < 1 or not 0 < weight <= 1:
            raise ValueError("batch_tokens must be at least 1 and weight in (0, 1]")
        self.batch_tokens = batch_tokens
        self.weight = weight
        self._n = self._x = self._y = self._xx = self._xy = 0.0
        self.fixed = 0.0
        self.per_token: float | None = None
        self.measured = 0  # batches observed

    def observe(self, tokens: int, seconds: float) -> None:
        """One batch of `tokens` real tokens took `seconds`."""
        if tokens <= 0 or seconds <= 0:
            return
        keep = 1.0 - self.weight
        self.measured += 1
        self._n = keep * self._n + 1.0
        self._x = keep * self._x + tokens
        self._y = keep * self._y + seconds
        self._xx = keep * self._xx + tokens * tokens
        self._xy = keep * self._xy + tokens * seconds
        self.fixed, self.per_token = self._fit()

    def _fit(self) -> tuple[float, float]:
        mean_x, mean_y = self._x / self._n, self._y / self._n
        spread = self._xx / self._n - mean_x * mean_x
        if spread > (0.1 * mean_x) ** 2:  # sizes differ enough to tell the two parts apart
            slope = (self._xy / self._n - mean_x * mean_y) / spread
            fixed = mean_y - slope * mean_x
            if slope > 0 and 0 <= fixed < mean_y:
                return fixed, slope
        return 0.0, mean_y / mean_x

    def seconds_for(self, tokens: int) -> float | None:
        """How long `tokens` queued take to clear in full batches, or None before any batch ran."""
        if self.per_token is None:
            return None
        if tokens <= 0:
            return 0.0
        return math.ceil(tokens / self.batch_tokens) * self.fixed + tokens * self.per_token

    @property
    def tokens_per_s(self) -> float | None:
        """The speed at full batches (what /metrics shows), or None before any batch ran."""
        full = self.seconds_for(self.batch_tokens)
        return None if not full else self.batch_tokens / full
