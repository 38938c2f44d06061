"""CoSENTLoss (Su, 2022; Huang et al., 2024): rank the pairs of a batch by cosine similarity.

With s_i = cos(u_i, v_i) and scale λ (an inverse temperature), the loss over all ordered pairs of
examples whose gold scores differ is

    loss = log(1 + Σ_{y_i > y_j} exp(λ · (s_j − s_i)))

Only the order of the labels matters, so raw KorSTS scores (0–5) work as they are. It trains the
same cosine-similarity geometry as CosineSimilarityLoss, usually with a stronger signal.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..encoders.dense.encoder import SentenceEncoder
from .base import SentenceLoss

COSENT_CITATION = """@article{10531646,
    author={Huang, Xiang and Peng, Hao and Zou, Dongcheng and Liu, Zhiwei and Li, Jianxin
        and Liu, Kay and Wu, Jia and Su, Jianlin and Yu, Philip S.},
    journal={IEEE/ACM Transactions on Audio, Speech, and Language Processing},
    title={CoSENT: Consistent Sentence Embedding via Similarity Ranking},
    year={2024},
    doi={10.1109/TASLP.2024.3402087}
}"""


class CoSENTLoss(SentenceLoss):
    """`log(1 + Σ_{y_i > y_j} exp(scale · (cos_j − cos_i)))` over the pairs of a batch."""

    citation = COSENT_CITATION

    def __init__(self, model: SentenceEncoder, scale: float = 20.0) -> None:
        super().__init__(model)
        if not scale > 0:
            raise ValueError(f"scale must be positive, not {scale}")
        self.scale = scale

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        self.check_columns(len(embeddings))
        u, v = embeddings
        labels = self.check_labels(labels, u.shape[0]).to(u.device)
        scores = self.pair_scores(u, v)
        if scores.dtype in (torch.float16, torch.bfloat16):
            scores = scores.float()  # exp of scaled differences needs float32 range
        scores = scores * self.scale
        # diff[i, j] = s_j − s_i, kept where y_i > y_j; the leading 0 is the "1 +" inside the log.
        diff = scores[None, :] - scores[:, None]
        diff = diff.masked_fill(~(labels[:, None] > labels[None, :]), float("-inf"))
        return torch.logsumexp(torch.cat([diff.new_zeros(1), diff.flatten()]), dim=0)

    def pair_scores(self, u: Tensor, v: Tensor) -> Tensor:
        """The similarity that is ranked: cosine here, AnglE's angle similarity in `AnglELoss`."""
        return F.cosine_similarity(u, v, dim=-1)

    def get_config_dict(self) -> dict[str, Any]:
        return {"scale": self.scale}
