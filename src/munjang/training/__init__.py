"""Training: examples, arguments, the trainer and its checkpoints."""

from ..data.example import Example, ListwiseExample
from .adaptation import adapt, corpus_sentences
from .args import TrainingArguments
from .hard_negatives import mine_hard_negatives
from .static_distill import distill_static
from .static_tokenlearn import StaticFit, tokenlearn_static
from .trainer import Trainer

__all__ = [
    "Example",
    "ListwiseExample",
    "StaticFit",
    "Trainer",
    "TrainingArguments",
    "adapt",
    "corpus_sentences",
    "distill_static",
    "mine_hard_negatives",
    "tokenlearn_static",
]
