"""The parsed training config: its dataclasses, the names a config may use, and `ConfigError`.

What `load_config` (in `munjang.training.config`, whose docstring describes the YAML layout) returns
and what `config_build` consumes. Kept apart from the parsing so that every config module can import
these without importing each other in a circle; it imports nothing else of the config.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import MunjangError
from .args import TrainingArguments

FORMATS = ("sts", "nli-pairs", "nli-triplets", "table", "parallel")
EVALUATOR_TYPES = ("sts", "triplet", "binary", "translation", "label-accuracy", "mse")
ARCHITECTURES = ("bi-encoder", "cross-encoder")
CROSS_ENCODER_FORMATS = ("sts", "nli-pairs", "table")
CROSS_ENCODER_EVALUATOR_TYPES = ("sts", "classification")


class ConfigError(MunjangError, ValueError):
    """A training config is invalid; the message names the YAML key (or file and line)."""


@dataclass
class ModelRef:
    """A model named in the config: `value` as written, `target` a resolved folder or a hub id."""

    value: str
    target: str
    is_path: bool
    key: str


@dataclass
class LossConfig:
    """A loss by its `LOSSES` name and keyword arguments; `inner` is the loss a matryoshka wraps."""

    name: str
    options: dict[str, Any]
    key: str
    inner: LossConfig | None = None


@dataclass
class DataConfig:
    """Where a task's examples come from and how to read them."""

    path: Path
    format: str
    reader_options: dict[str, Any]
    key: str
    columns: list[str | int] | None = None
    label: str | int | None = None
    label_type: Any = float
    teacher: ModelRef | None = None
    teacher_prompt_name: str | None = None


@dataclass
class TaskConfig:
    """One training task: data, loss and an optional cap on the number of examples."""

    name: str
    data: DataConfig
    loss: LossConfig
    limit: int | None
    key: str


@dataclass
class EvaluatorConfig:
    """One evaluator: its type, data file, reader options and constructor arguments."""

    type: str
    path: Path
    reader_options: dict[str, Any]
    options: dict[str, Any]
    key: str
    columns: list[str | int] | None = None
    label: str | int | None = None
    loss_task: str | None = None
    teacher: ModelRef | None = None
    limit: int | None = None


@dataclass
class TrainConfig:
    """A parsed and checked training config (see `munjang.training.config` for the YAML layout)."""

    source: Path
    model: ModelRef
    output_dir: Path
    tasks: list[TaskConfig]
    evaluators: list[EvaluatorConfig]
    training: TrainingArguments
    pooling: str | list[str] | None = None
    max_seq_length: int | None = None
    device: str | None = None
    architecture: str = "bi-encoder"
    head: str = "auto"
    num_labels: int | None = None

    def training_args(self) -> TrainingArguments:
        """The training arguments, writing to `output_dir`."""
        return replace(self.training, output_dir=str(self.output_dir))


__all__ = [
    "ARCHITECTURES",
    "CROSS_ENCODER_EVALUATOR_TYPES",
    "CROSS_ENCODER_FORMATS",
    "EVALUATOR_TYPES",
    "FORMATS",
    "ConfigError",
    "DataConfig",
    "EvaluatorConfig",
    "LossConfig",
    "ModelRef",
    "TaskConfig",
    "TrainConfig",
]
