"""Evaluators: score an encoder on a benchmark and return named metrics with a primary one."""

from .binary_classification import BinaryClassificationEvaluator
from .label_accuracy import LabelAccuracyEvaluator
from .mse import MSEEvaluator
from .retrieval import InformationRetrievalEvaluator, evaluate_rankings, evaluate_rankings_per_query
from .sequential import SequentialEvaluator
from .sts import STSEvaluator
from .translation import TranslationEvaluator
from .triplet import TripletEvaluator

__all__ = [
    "BinaryClassificationEvaluator",
    "InformationRetrievalEvaluator",
    "LabelAccuracyEvaluator",
    "MSEEvaluator",
    "STSEvaluator",
    "SequentialEvaluator",
    "TranslationEvaluator",
    "TripletEvaluator",
    "evaluate_rankings",
    "evaluate_rankings_per_query",
]
