"""MSEEvaluator: how closely a student encoder reproduces a teacher's embeddings (distillation)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..data.checks import check_same_length
from ..data.parallel import ParallelData
from .base import Evaluator, SupportsEncode, encode_texts

logger = logging.getLogger(__name__)


class MSEEvaluator(Evaluator):
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

    optional_settings = ("prompt_name", "prompt", "teacher_prompt_name")

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
        check_same_length(source_sentences=source_sentences, target_sentences=target_sentences)
        if not source_sentences:
            raise ValueError("no sentences to evaluate")
        super().__init__(name, batch_size, prompt_name, prompt, show_progress_bar, "negative_mse")
        self.source_sentences = list(source_sentences)
        self.target_sentences = list(target_sentences)
        self.teacher_prompt_name = teacher_prompt_name
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
        student = self.encode(encoder, self.target_sentences)
        if student.shape != self.source_embeddings.shape:
            raise ValueError(
                f"student embeddings have shape {student.shape}, the teacher's {self.source_embeddings.shape}"
            )
        mse = float(np.mean((self.source_embeddings - student) ** 2)) * 100
        logger.info("MSE (x100) %s: %.6f", self.name or "evaluation", mse)
        return {"mse": mse, "negative_mse": -mse}

    def _describe(self) -> str:
        return f"{len(self)} sentence pairs"
