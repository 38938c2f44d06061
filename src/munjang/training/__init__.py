"""Training: examples, arguments, the trainer and its checkpoints."""

from ..data.example import Example
from .args import TrainingArguments
from .hard_negatives import mine_hard_negatives
from .trainer import Trainer

__all__ = ["Example", "Trainer", "TrainingArguments", "mine_hard_negatives"]
