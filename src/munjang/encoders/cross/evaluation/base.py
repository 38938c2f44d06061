"""What the cross-encoder evaluators share: options, config and repr; each scores pairs with `predict`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Protocol

import numpy as np


class SupportsPredict(Protocol):
    """What the evaluators need: `predict(pairs, **options) -> scores` and `num_labels`."""

    @property
    def num_labels(self) -> int: ...

    def predict(self, pairs: Any, **options: Any) -> Any: ...


class CrossEncoderEvaluator(ABC):
    """Base of the cross-encoder evaluators: calling one on a model returns its metrics."""

    def __init__(
        self, name: str, batch_size: int, show_progress_bar: bool | None, primary_metric: str
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        self.name = name
        self.batch_size = batch_size
        self.show_progress_bar = show_progress_bar
        self.primary_metric = primary_metric

    @abstractmethod
    def __call__(self, model: SupportsPredict) -> dict[str, float]:
        """Evaluate `model` and return the metrics."""

    @abstractmethod
    def __len__(self) -> int:
        """The number of items (pairs or queries) evaluated."""

    def scores(self, model: SupportsPredict, pairs: list[tuple[str, str]], **options: Any) -> np.ndarray:
        """`model.predict` on `pairs` with this evaluator's batch size and progress bar, as float64."""
        out = model.predict(
            pairs, batch_size=self.batch_size, show_progress_bar=self.show_progress_bar, **options
        )
        return np.asarray(out, dtype=np.float64)

    def get_config_dict(self) -> dict[str, Any]:
        """The settings that change the numbers (for model cards and result logs)."""
        return {}

    def __repr__(self) -> str:
        name = f"{self.name!r}, " if self.name else ""
        return f"{type(self).__name__}({name}{len(self)} items)"
