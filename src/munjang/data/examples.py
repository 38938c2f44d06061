"""Converters from the readers' data classes to training `Example`s."""

from __future__ import annotations

from .example import Example
from .sts import STSData


def sts_examples(data: STSData, max_score: float = 5.0) -> list[Example]:
    """One Example per pair: texts (sentence1, sentence2), label the score divided by `max_score`.

    Cosine-similarity losses train towards labels in [0, 1], so 0-5 STS scores are scaled down.
    """
    scores = data.normalized_scores(max_score)
    return [Example((a, b), s) for a, b, s in zip(data.sentences1, data.sentences2, scores, strict=True)]
