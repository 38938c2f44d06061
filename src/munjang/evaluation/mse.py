"""MSEEvaluator: how closely a student encoder reproduces a teacher's embeddings (distillation)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..data.parallel import ParallelData
from .sts import SupportsEncode
from .triplet import encode_texts

logger = logging.getLogger(__name__)


class MSEEvaluator:
    """Mean squared error between teacher embeddings of the sources and student embeddings of the targets.

    For multilingual knowledge distillation (Reimers & Gurevych 2020) the sources are, e.g., English
    sentences and the targets their translations; the student should map a translation where the
    teacher maps the original. With teacher vectors T_i = E_teacher(source_i) and student vectors
    S_i = E_student(target_i), both of dimension d,

        mse          = 100 * (1 / (n d)) sum_i sum_j (T_ij - S_ij)^2
        negative_mse = -mse                (the primary metric, so that higher is better)

    scaled by 100 as sentence-transformers' ``MSEEvaluator`` does. The teacher is encoded once, when
    the evaluator is built; `teacher` may also be the (n, d) teacher embeddings themselves (numpy or torch).
    """

    def __init__(
        self,
        source_sentences: Sequence[str],
        target_sentences: Sequence[str],
        teacher: SupportsEncode | np.ndarray | torch.Tensor,
        name: str = "",
        batch_size: int = 32,
        prompt_name: str | None = None,
        prompt: str | None = None,
        teacher_prompt_name: str | None = None,
        show_progress_bar: bool | None = None,
    ) -> None:
        if len(source_sentences) != len(target_sentences):
            raise ValueError(
                f"source_sentences and target_sentences differ in length: "
                f"{len(source_sentences)}, {len(target_sentences)}"
            )
        if not source_sentences:
            raise ValueError("no sentences to evaluate")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        self.source_sentences = list(source_sentences)
        self.target_sentences = list(target_sentences)
        self.name = name
        self.batch_size = batch_size
        self.prompt_name = prompt_name
        self.prompt = prompt
        self.teacher_prompt_name = teacher_prompt_name
        self.show_progress_bar = show_progress_bar
        self.primary_metric = "negative_mse"
        if isinstance(teacher, (np.ndarray, torch.Tensor)):
            given = teacher.detach().cpu().numpy() if isinstance(teacher, torch.Tensor) else teacher
            embeddings = np.asarray(given, dtype=np.float64)
            if embeddings.ndim != 2 or embeddings.shape[0] != len(self.source_sentences):
                raise ValueError(
                    f"teacher embeddings have shape {embeddings.shape}, "
                    f"expected ({len(self.source_sentences)}, dim)"
                )
            self.source_embeddings = embeddings
        else:
            self.source_embeddings = encode_texts(
                teacher,
                self.source_sentences,
                batch_size=batch_size,
                prompt_name=teacher_prompt_name,
                show_progress_bar=show_progress_bar,
            )

    @classmethod
    def from_data(
        cls, data: ParallelData, teacher: SupportsEncode | np.ndarray | torch.Tensor, **kwargs: Any
    ) -> MSEEvaluator:
        """An evaluator over parallel sentences: teacher on `data.sources`, student on `data.targets`."""
        return cls(data.sources, data.targets, teacher, **kwargs)

    def __len__(self) -> int:
        return len(self.target_sentences)

    def __call__(self, encoder: SupportsEncode) -> dict[str, float]:
        """Encode the targets with `encoder` (the student) and return ``mse`` and ``negative_mse``."""
        student = encode_texts(
            encoder,
            self.target_sentences,
            batch_size=self.batch_size,
            prompt_name=self.prompt_name,
            prompt=self.prompt,
            show_progress_bar=self.show_progress_bar,
        )
        if student.shape != self.source_embeddings.shape:
            raise ValueError(
                f"student embeddings have shape {student.shape}, the teacher's {self.source_embeddings.shape}"
            )
        mse = float(np.mean((self.source_embeddings - student) ** 2)) * 100
        logger.info("MSE (x100) %s: %.6f", self.name or "evaluation", mse)
        return {"mse": mse, "negative_mse": -mse}

    def get_config_dict(self) -> dict[str, Any]:
        """The settings that change the numbers; unset ones are left out."""
        config: dict[str, Any] = {}
        for key in ("prompt_name", "prompt", "teacher_prompt_name"):
            value = getattr(self, key)
            if value is not None:
                config[key] = value
        return config

    def __repr__(self) -> str:
        name = f"{self.name!r}, " if self.name else ""
        return f"MSEEvaluator({name}{len(self)} sentence pairs)"
