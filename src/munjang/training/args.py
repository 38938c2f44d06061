"""Training hyper-parameters, with the SBERT paper's defaults where it gives one."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

MixedPrecision = Literal["no", "bf16", "fp16", "auto"]


@dataclass
class TrainingArguments:
    """What a training run needs besides the model, loss, data and evaluator.

    - Optimizer: AdamW (`learning_rate`, `weight_decay`, no decay on biases and LayerNorm weights).
    - Schedule: linear warm-up over `warmup_ratio` of the steps (10%, as in SBERT), then linear decay.
    - `batch_size` is per process; with gradient accumulation and several processes the global batch
      is batch_size x gradient_accumulation_steps x processes.
    - `mixed_precision`: "auto" picks bf16 on GPUs that support it and on CPUs with AMX, fp16 on older
      GPUs, and full precision otherwise.
    - `eval_steps` / `save_steps`: 0 means at the end of each epoch only. `save_checkpoints=False` writes
      no periodic checkpoints (Ctrl-C still leaves one).
    - `freeze_word_embeddings`: keep the token embedding matrix fixed. Multilingual models spend most
      of their parameters there (e5-small: 96M of 118M); freezing it saves a dense gradient and an
      optimizer update per step, which matters on a CPU.
    - `multi_task`: "round_robin" alternates one batch from each data set while any has batches left
      (every example is seen once per epoch); "shortest" stops the epoch when one runs out.
    """

    output_dir: str = "runs/munjang"
    epochs: int = 1
    max_steps: int = 0
    batch_size: int = 16
    learning_rate: float = 2e-5
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    gradient_accumulation_steps: int = 1
    mixed_precision: MixedPrecision = "no"
    eval_steps: int = 0
    save_steps: int = 0
    save_total_limit: int = 2
    save_checkpoints: bool = True
    logging_steps: int = 10
    seed: int = 42
    multi_task: Literal["round_robin", "shortest"] = "round_robin"
    prompt_name: str | None = None
    freeze_word_embeddings: bool = False
    show_progress_bar: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "gradient_accumulation_steps", "logging_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")
        for name in ("max_steps", "eval_steps", "save_steps", "save_total_limit"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 or more, not {getattr(self, name)}")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must be in [0, 1), not {self.warmup_ratio}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, not {self.learning_rate}")
        if self.mixed_precision not in ("no", "bf16", "fp16", "auto"):
            raise ValueError(f"mixed_precision must be no, bf16, fp16 or auto, not {self.mixed_precision!r}")
        if self.multi_task not in ("round_robin", "shortest"):
            raise ValueError(f"multi_task must be round_robin or shortest, not {self.multi_task!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainingArguments:
        """Build from a config mapping, naming any key that is not an argument."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown training argument(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**values)
