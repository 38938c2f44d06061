"""Evaluators: score an encoder on a benchmark and return named metrics."""

from .sts import STSEvaluator

__all__ = ["STSEvaluator"]
