"""Evaluators for cross-encoders: correlation (STS), classification (NLI, relevance) and reranking."""

from .base import CrossEncoderEvaluator
from .classification import CrossEncoderClassificationEvaluator
from .correlation import CrossEncoderCorrelationEvaluator
from .reranking import CrossEncoderRerankingEvaluator

__all__ = [
    "CrossEncoderClassificationEvaluator",
    "CrossEncoderCorrelationEvaluator",
    "CrossEncoderEvaluator",
    "CrossEncoderRerankingEvaluator",
]
