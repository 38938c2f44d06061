"""MultipleNegativesRankingLoss (Henderson et al., 2017; InfoNCE): in-batch negatives.

Columns: (anchor, positive[, hard negative 1, ..., hard negative k]). With s the similarity
(cosine by default) and scale λ (inverse temperature), each anchor a_i must pick its own positive
p_i out of every positive and hard negative of the batch (the candidates c):

    loss_{a→p} = mean_i −log( exp(λ·s(a_i, p_i)) / Σ_c exp(λ·s(a_i, c)) )

`symmetric=True` adds the other direction, each positive picking its anchor out of all anchors,
and averages the two (hard negatives take part only in the first direction):

    loss = ½ · (loss_{a→p} + loss_{p→a})

Only positive pairs are needed (e.g. NLI entailment pairs, question–answer pairs); a larger batch
means more negatives and usually a better model.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from .. import similarity as sim
from ..encoder import SentenceEncoder
from .base import SentenceLoss

SIMILARITY_FUNCTIONS = ("cosine", "dot")

HENDERSON_CITATION = """@misc{henderson2017efficient,
    title={Efficient Natural Language Response Suggestion for Smart Reply},
    author={Matthew Henderson and Rami Al-Rfou and Brian Strope and Yun-hsuan Sung
        and Laszlo Lukacs and Ruiqi Guo and Sanjiv Kumar and Balint Miklos and Ray Kurzweil},
    year={2017},
    eprint={1705.00652},
    archivePrefix={arXiv},
    primaryClass={cs.CL}
}"""


class MultipleNegativesRankingLoss(SentenceLoss):
    """Cross-entropy of each anchor against its positive, with the other in-batch texts as negatives."""

    max_columns = None
    needs_labels = False
    citation = HENDERSON_CITATION

    def __init__(
        self,
        model: SentenceEncoder,
        scale: float = 20.0,
        similarity_fct: str = "cosine",
        symmetric: bool = False,
    ) -> None:
        super().__init__(model)
        if not scale > 0:
            raise ValueError(f"scale must be positive, not {scale}")
        if similarity_fct not in SIMILARITY_FUNCTIONS:
            raise ValueError(
                f"unknown similarity function {similarity_fct!r}; "
                f"choose from {', '.join(SIMILARITY_FUNCTIONS)}"
            )
        self.scale = scale
        self.similarity_fct = similarity_fct
        self.symmetric = symmetric

    def compute_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        self.check_columns(len(embeddings))
        anchors, positives = embeddings[0], embeddings[1]
        candidates = torch.cat(embeddings[1:], dim=0)
        targets = torch.arange(anchors.shape[0], device=anchors.device)
        scores = sim.similarity(anchors, candidates, self.similarity_fct) * self.scale
        loss = F.cross_entropy(scores, targets)
        if not self.symmetric:
            return loss
        backward_scores = sim.similarity(positives, anchors, self.similarity_fct) * self.scale
        return (loss + F.cross_entropy(backward_scores, targets)) / 2

    def get_config_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "similarity_fct": self.similarity_fct, "symmetric": self.symmetric}
