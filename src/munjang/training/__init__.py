"""Training: examples, arguments, the trainer and its checkpoints."""

from .args import TrainingArguments
from .examples import Example
from .trainer import Trainer

__all__ = ["Example", "Trainer", "TrainingArguments"]
