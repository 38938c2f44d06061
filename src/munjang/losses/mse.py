"""MSELoss: distillation onto a teacher's embeddings (Reimers & Gurevych, 2020).

The labels hold the teacher's embedding of each example, (batch, dim) — or (batch, columns, dim)
for one teacher vector per column. Every column's student embedding is regressed onto it:

    loss = mean_columns  mean_{i,d} (student_c(x_i)_d − teacher_i,d)²

Typical use: make a model multilingual with (English, Korean) translation pairs, where the
teacher embeds the English side and the student learns to map both sides onto that vector.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .base import SentenceLoss

MULTILINGUAL_CITATION = """@inproceedings{reimers-2020-multilingual-sentence-bert,
    title = "Making Monolingual Sentence Embeddings Multilingual using Knowledge Distillation",
    author = "Reimers, Nils and Gurevych, Iryna",
    booktitle = "Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing",
    year = "2020",
    publisher = "Association for Computational Linguistics",
    url = "https://arxiv.org/abs/2004.09813",
}"""


class MSELoss(SentenceLoss):
    """Mean squared error between each column's student embedding and the teacher embeddings."""

    min_columns = 1
    max_columns = None
    label_kind = "vector"
    citation = MULTILINGUAL_CITATION

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        self.check_columns(len(embeddings))
        if labels is None:
            raise ValueError("MSELoss needs the teacher embeddings as labels, got None")
        first = embeddings[0]
        teacher = labels.detach().to(device=first.device, dtype=first.dtype)
        if teacher.dim() == 2:
            targets = [teacher] * len(embeddings)
        elif teacher.dim() == 3 and teacher.shape[1] == len(embeddings):
            targets = [teacher[:, c] for c in range(len(embeddings))]
        else:
            raise ValueError(
                f"MSELoss labels must be teacher embeddings of shape (batch, dim) or "
                f"(batch, {len(embeddings)}, dim), got {tuple(teacher.shape)}"
            )
        if targets[0].shape != first.shape:
            raise ValueError(
                f"teacher embeddings have shape {tuple(targets[0].shape)} but the student's are "
                f"{tuple(first.shape)}"
            )
        return torch.stack([F.mse_loss(e, t) for e, t in zip(embeddings, targets, strict=True)]).mean()
