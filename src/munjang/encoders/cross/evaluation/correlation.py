"""CrossEncoderCorrelationEvaluator: how well pair scores follow gold similarity (STS).

    pearson  = r(s, g),   spearman = r(rank(s), rank(g))

with s the model's score for each pair (after its activation) and g the gold score, computed with
scipy. Spearman is the headline (primary) metric, as for the bi-encoder's STS evaluator, so the two
architectures are compared on the same number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scipy.stats import pearsonr, spearmanr

from ....data.checks import check_same_length
from ....data.sts import STSData
from .base import CrossEncoderEvaluator, SupportsPredict


class CrossEncoderCorrelationEvaluator(CrossEncoderEvaluator):
    """Pearson and Spearman correlation between predicted and gold scores of sentence pairs."""

    def __init__(
        self,
        sentences1: Sequence[str],
        sentences2: Sequence[str],
        scores: Sequence[float],
        *,
        name: str = "",
        batch_size: int = 32,
        show_progress_bar: bool | None = None,
    ) -> None:
        super().__init__(name, batch_size, show_progress_bar, "spearman")
        check_same_length(sentences1=sentences1, sentences2=sentences2, scores=scores)
        if len(scores) < 2:
            raise ValueError("a correlation needs at least 2 pairs")
        self.pairs = list(zip(sentences1, sentences2, strict=True))
        self.gold = [float(s) for s in scores]

    @classmethod
    def from_data(cls, data: STSData, **kwargs: Any) -> CrossEncoderCorrelationEvaluator:
        """An evaluator over an `STSData` (e.g. `read_sts("sts-test.tsv")`)."""
        return cls(data.sentences1, data.sentences2, data.scores, **kwargs)

    def __len__(self) -> int:
        return len(self.pairs)

    def __call__(self, model: SupportsPredict) -> dict[str, float]:
        if model.num_labels != 1:
            raise ValueError(
                f"correlation needs a single-score model, this one has {model.num_labels} labels"
            )
        predicted = self.scores(model, self.pairs)
        return {
            "pearson": float(pearsonr(predicted, self.gold)[0]),
            "spearman": float(spearmanr(predicted, self.gold)[0]),
        }
